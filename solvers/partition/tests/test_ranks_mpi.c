/* The collectives of ranks.c over the ranks of an MPI job (mpirun -np 1..4): what a rank sends
 * to each rank arrives whole and in rank order, through MPI's collectives below the 2 GiB their
 * int counts allow and point to point past it. This build of ranks.c (weft_partition_check)
 * takes the point-to-point path past 4096 bytes, in messages of 1000, so both paths run with
 * small rows. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_harness.h"
#include "partition.h"
#include "ranks.h"

/* The byte at i of what rank `from` sends rank `to`. */
static uint8_t pattern(int from, int to, size_t i) {
  return (uint8_t)(from * 31 + to * 7 + i * 13 + (i >> 8));
}

/* A set of one partition a rank over world_ (no devices: only its ranks are used). */
static wfpt_set *open_set(void) {
  wfpt_set *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  snprintf(s->what, sizeof s->what, "ranks test");
  s->n = ranks_;
  if (wfpt_ranks_open(s, &world_) != WF_OK) {
    free(s);
    return NULL;
  }
  return s;
}

static void close_set(wfpt_set *s) {
  wfpt_ranks_close(s);
  free(s);
}

/* Every rank sends len(me, r) bytes to rank r; each checks what came. */
static void alltoallv_sizes(size_t base, size_t per_from, size_t per_to) {
  wfpt_set *s = open_set();
  CHECK(s != NULL);
  if (!s) return;
  size_t bytes[WFPT_MAX], total = 0;
  for (int r = 0; r < ranks_; r++)
    bytes[r] = base + per_from * (size_t)rank_ + per_to * (size_t)r, total += bytes[r];
  uint8_t *send = malloc(total + 1);
  size_t at = 0;
  for (int r = 0; r < ranks_; r++)
    for (size_t i = 0; i < bytes[r]; i++)
      send[at++] = pattern(rank_, r, i);
  void *recv = NULL;
  size_t got = 0;
  CHECK_OK(wfpt_ranks_alltoallv(s, send, bytes, &recv, &got));
  size_t want = 0;
  for (int r = 0; r < ranks_; r++)
    want += base + per_from * (size_t)r + per_to * (size_t)rank_;
  CHECK_EQ_INT(got, want);
  const uint8_t *in = recv;
  size_t bad = 0;
  at = 0;
  for (int r = 0; r < ranks_ && got == want && in; r++) {
    size_t len = base + per_from * (size_t)r + per_to * (size_t)rank_;
    for (size_t i = 0; i < len; i++)
      bad += in[at++] != pattern(r, rank_, i);
  }
  CHECK_EQ_INT(bad, 0);
  free(recv), free(send);
  close_set(s);
}

/* Below the limit: MPI_Alltoallv. */
static void alltoallv_small(void) { alltoallv_sizes(40, 100, 30); }

/* Past it (rank 0 alone receives more than 4096 bytes with 2 ranks or more; the messages are
 * split into pieces of 1000 bytes): point to point, the same bytes. One rank: a copy. */
static void alltoallv_large(void) { alltoallv_sizes(1500, 2100, 700); }

/* Every rank's rows (len(r) bytes) to every rank, in rank order. */
static void allgather_sizes(size_t base, size_t per) {
  wfpt_set *s = open_set();
  CHECK(s != NULL);
  if (!s) return;
  size_t mine = base + per * (size_t)rank_;
  uint8_t *send = malloc(mine + 1);
  for (size_t i = 0; i < mine; i++)
    send[i] = pattern(rank_, 0, i);
  void *all = NULL;
  size_t got = 0, want = 0;
  CHECK_OK(wfpt_ranks_allgather(s, send, mine, &all, &got));
  for (int r = 0; r < ranks_; r++)
    want += base + per * (size_t)r;
  CHECK_EQ_INT(got, want);
  const uint8_t *in = all;
  size_t bad = 0, at = 0;
  for (int r = 0; r < ranks_ && got == want && in; r++)
    for (size_t i = 0; i < base + per * (size_t)r; i++)
      bad += in[at++] != pattern(r, 0, i);
  CHECK_EQ_INT(bad, 0);
  free(all), free(send);
  close_set(s);
}

static void allgather_small(void) { allgather_sizes(64, 300); }
static void allgather_large(void) { allgather_sizes(2500, 1900); }

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(alltoallv_small),
      TH_TEST(alltoallv_large),
      TH_TEST(allgather_small),
      TH_TEST(allgather_large),
  };
  return th_mpi_main(argc, argv, tests, TH_COUNT(tests));
}

/* libFuzzer target: arbitrary bytes opened as a checkpoint from memory.
 *
 * The reader must refuse or accept every input without reading outside it; an accepted one has
 * its sections enumerated, looked up by name and read end to end (summed, so that ASan sees every
 * byte touched), and each lookup must find the section enumeration gave.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink; /* keeps the reads of section bytes */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wf_ckpt_reader *r = NULL;
  if (wf_ckpt_open_memory(data, size, &r) != WF_OK) {
    if (r) abort(); /* a refused input leaves no reader */
    return 0;
  }
  size_t n = wf_ckpt_section_count(r);
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name;
    const void *p, *q;
    size_t bytes, qbytes;
    if (wf_ckpt_section_at(r, i, &name, &p, &bytes) != WF_OK) abort();
    if (strlen(name) == 0 || strlen(name) > WF_CKPT_NAME_MAX) abort();
    const uint8_t *b = p;
    if (bytes && (b < data || b + bytes > data + size)) abort();
    for (size_t k = 0; k < bytes; k++)
      sum += b[k];
    if (wf_ckpt_section(r, name, &q, &qbytes) != WF_OK || q != p || qbytes != bytes) abort();
    if (wf_ckpt_find(r, name) != (long)i) abort();
  }
  if (wf_ckpt_section_at(r, n, NULL, NULL, NULL) == WF_OK) abort();
  wf_ckpt_close(r);
  sink = sum;
  return 0;
}

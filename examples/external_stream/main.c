/* external_stream: a host program's own CUDA stream and kernel, and weft's cloth substeps, captured
 * into ONE CUDA graph and replayed.
 *
 * The program owns a cudaStream_t, device memory (cudaMalloc) and kernels (host_kernels.cu) that
 * know nothing of weft. weft adopts the stream with wf_stream_wrap, and the cloth solver is
 * created on it (wf_cloth_desc.stream), so every substep it enqueues lands on the program's
 * stream. One frame is then:
 *
 *     weft:    wf_cloth_step_substeps(cloth, K)         K substeps, kernels enqueued one by one
 *     weft:    wf_cloth_copy_positions(cloth, pos, 0)   into the program's cudaMalloc'ed buffer,
 *                                                       adopted with wf_buffer_wrap
 *     program: hk_trail_update(pos, trail, tick, ...)   its own kernels on its own stream
 *
 * wf_capture_begin on the wrapped stream records one such frame into a graph (CUDA stream capture
 * of the program's stream: the program's kernel launches are captured with weft's work, in
 * order); wf_graph_launch replays it N times. The solver's own per-frame graph
 * (wf_cloth_step_frames) is not used inside the capture: a graph cannot be launched into another
 * capture, and wf_cloth_step_substeps enqueues the same substeps directly. The same N frames are
 * also run eagerly (no graph) on a second cloth with a second set of buffers, and the two results
 * (the cloth state, the program's trail buffer and frame counter) must be equal bit for bit.
 *
 * Exit status: 0 equal, 1 a failure or a difference, 77 no CUDA device (or a weft built without
 * its CUDA backend), with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <weft/weft.h>

#include "host_kernels.h"

enum { FRAMES = 60 };

/* The program's own buffers for one run: positions (wrapped for weft), trail, frame counter. */
typedef struct run {
  wf_cloth *cloth;
  int substeps;     /* per frame */
  float *pos;       /* cudaMalloc: 4 floats per vertex */
  float *trail;     /* cudaMalloc: 1 float per vertex */
  unsigned *tick;   /* cudaMalloc: the frame counter */
  wf_buffer *pos_w; /* pos adopted by weft (not owned) */
} run;

static int weft_ok(wf_status st, const char *what) {
  if (st == WF_OK) return 1;
  fprintf(stderr, "external_stream: %s: %s: %s\n", what, wf_status_str(st), wf_last_error());
  return 0;
}

static int cuda_ok(int err, const char *what) {
  if (err == cudaSuccess) return 1;
  fprintf(stderr, "external_stream: %s: %s\n", what, cudaGetErrorString((cudaError_t)err));
  return 0;
}

/* A spring cloth pinned along its top edge, on the program's (wrapped) stream. */
static int run_create(wf_device *dev, wf_stream *ws, cudaStream_t native, run *r) {
  memset(r, 0, sizeof *r);
  wf_cloth_desc d = wf_cloth_desc_default(); /* mass-spring, 16 substeps at 60 frames/s */
  d.name = "banner";
  d.stream = ws;
  d.wind[0] = 3.0f; /* m/s along +x: through drag, the cloth flutters */
  d.material.drag = 1.0f;
  wf_cloth_grid g = wf_cloth_grid_default(); /* 1 m x 1 m, 16 x 16 vertices, flat */
  r->substeps = d.substeps;
  d.devices[0] = dev;
  if (!weft_ok(wf_cloth_create_grid(&d, &g, &r->cloth), "wf_cloth_create_grid") ||
      !weft_ok(wf_cloth_pin_named(r->cloth, "top", NULL), "wf_cloth_pin_named"))
    return 0;
  wf_cloth_info info;
  if (!weft_ok(wf_cloth_info_get(r->cloth, &info), "wf_cloth_info_get")) return 0;
  size_t n = info.vertices;
  if (!cuda_ok(cudaMalloc((void **)&r->pos, n * 4 * sizeof(float)), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&r->trail, n * sizeof(float)), "cudaMalloc") ||
      !cuda_ok(cudaMalloc((void **)&r->tick, sizeof(unsigned)), "cudaMalloc") ||
      !cuda_ok(cudaMemsetAsync(r->trail, 0, n * sizeof(float), native), "cudaMemsetAsync") ||
      !cuda_ok(cudaMemsetAsync(r->tick, 0, sizeof(unsigned), native), "cudaMemsetAsync"))
    return 0;
  return weft_ok(wf_buffer_wrap(dev, r->pos, n * 4 * sizeof(float), &r->pos_w), "wf_buffer_wrap");
}

static void run_destroy(run *r) {
  wf_cloth_destroy(r->cloth); /* waits for its work; the wrapped stream is not destroyed */
  if (r->pos_w) wf_buffer_destroy(r->pos_w, NULL); /* releases weft's handle, not the memory */
  cudaFree(r->pos), cudaFree(r->trail), cudaFree(r->tick);
  memset(r, 0, sizeof *r);
}

/* One frame: weft's substeps and copy, then the program's kernels, all on the program's stream. */
static int frame(run *r, cudaStream_t native) {
  wf_cloth_info info;
  return weft_ok(wf_cloth_info_get(r->cloth, &info), "wf_cloth_info_get") &&
         weft_ok(wf_cloth_step_substeps(r->cloth, r->substeps), "wf_cloth_step_substeps") &&
         weft_ok(wf_cloth_copy_positions(r->cloth, r->pos_w, 0), "wf_cloth_copy_positions") &&
         cuda_ok(hk_trail_update(r->pos, r->trail, r->tick, info.vertices, native),
                 "the program's kernels");
}

/* Downloads what a run produced: cloth positions and velocities, the trail and the counter. */
static int results(run *r, float (*pos)[4], float (*vel)[4], float *trail, unsigned *tick,
                   size_t n) {
  return weft_ok(wf_cloth_download(r->cloth, pos, vel), "wf_cloth_download") &&
         cuda_ok(cudaMemcpy(trail, r->trail, n * sizeof(float), cudaMemcpyDeviceToHost),
                 "cudaMemcpy") &&
         cuda_ok(cudaMemcpy(tick, r->tick, sizeof(unsigned), cudaMemcpyDeviceToHost), "cudaMemcpy");
}

int main(void) {
  if (!weft_ok(wf_init(NULL), "wf_init")) return 1;
  wf_device *dev = NULL;
  if (wf_device_get("cuda", &dev) != WF_OK) {
    printf("SKIP: no CUDA device: %s\n", wf_last_error());
    wf_shutdown();
    return 77;
  }
  wf_device_info info;
  if (!weft_ok(wf_device_info_get(dev, &info), "wf_device_info_get")) return wf_shutdown(), 1;
  printf("device: %s (%s)\n", info.name, info.product);

  /* the program's own stream, as any CUDA program makes it */
  cudaStream_t native = NULL;
  if (!cuda_ok(cudaSetDevice(info.ordinal), "cudaSetDevice") ||
      !cuda_ok(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking), "cudaStreamCreate"))
    return wf_shutdown(), 1;

  int passed = 0;
  wf_stream *ws = NULL;
  wf_graph *graph = NULL;
  run eager = {0}, captured = {0};
  float(*pos_a)[4] = NULL, (*vel_a)[4] = NULL, (*pos_b)[4] = NULL, (*vel_b)[4] = NULL;
  float *trail_a = NULL, *trail_b = NULL;
  if (!weft_ok(wf_stream_wrap(dev, native, &ws), "wf_stream_wrap")) goto done;
  if (!run_create(dev, ws, native, &eager) || !run_create(dev, ws, native, &captured)) goto done;
  if (!cuda_ok(cudaStreamSynchronize(native), "cudaStreamSynchronize")) goto done;

  /* the reference: FRAMES frames enqueued one call at a time */
  for (int f = 0; f < FRAMES; f++)
    if (!frame(&eager, native)) goto done;

  /* the same frame captured once, from the program's stream, into one graph */
  if (!weft_ok(wf_capture_begin(ws), "wf_capture_begin")) goto done;
  int recorded = frame(&captured, native);
  wf_status st = wf_capture_end(ws, &graph); /* ends the capture even when recording failed */
  if (!recorded || !weft_ok(st, "wf_capture_end")) goto done;
  printf("one graph: %zu nodes (the cloth's substeps, the copy and the program's kernels)\n",
         wf_graph_node_count(graph));
  for (int f = 0; f < FRAMES; f++)
    if (!weft_ok(wf_graph_launch(graph, ws), "wf_graph_launch")) goto done;
  if (!cuda_ok(cudaStreamSynchronize(native), "cudaStreamSynchronize")) goto done;

  wf_cloth_info ci;
  if (!weft_ok(wf_cloth_info_get(captured.cloth, &ci), "wf_cloth_info_get")) goto done;
  size_t n = ci.vertices;
  pos_a = calloc(n, sizeof *pos_a), vel_a = calloc(n, sizeof *vel_a);
  pos_b = calloc(n, sizeof *pos_b), vel_b = calloc(n, sizeof *vel_b);
  trail_a = calloc(n, sizeof *trail_a), trail_b = calloc(n, sizeof *trail_b);
  if (!pos_a || !vel_a || !pos_b || !vel_b || !trail_a || !trail_b) {
    fprintf(stderr, "external_stream: out of host memory\n");
    goto done;
  }
  unsigned tick_a = 0, tick_b = 0;
  if (!results(&captured, pos_a, vel_a, trail_a, &tick_a, n) ||
      !results(&eager, pos_b, vel_b, trail_b, &tick_b, n))
    goto done;
  double t_a = 0, t_b = 0;
  uint64_t sub_a = 0, sub_b = 0;
  if (!weft_ok(wf_cloth_time(captured.cloth, &t_a, &sub_a), "wf_cloth_time") ||
      !weft_ok(wf_cloth_time(eager.cloth, &t_b, &sub_b), "wf_cloth_time"))
    goto done;

  int same = memcmp(pos_a, pos_b, n * sizeof *pos_a) == 0 &&
             memcmp(vel_a, vel_b, n * sizeof *vel_a) == 0 &&
             memcmp(trail_a, trail_b, n * sizeof *trail_a) == 0 && tick_a == tick_b &&
             sub_a == sub_b && t_a == t_b;
  printf("%d frames (%llu substeps, %.3f s) with the graph and without: program counter %u/%u, "
         "%s\n",
         FRAMES, (unsigned long long)sub_a, t_a, tick_a, tick_b,
         same ? "bitwise equal" : "DIFFERENT");
  passed = same && tick_a == FRAMES;

done:
  free(pos_a), free(vel_a), free(pos_b), free(vel_b), free(trail_a), free(trail_b);
  wf_graph_destroy(graph);
  run_destroy(&captured), run_destroy(&eager);
  wf_stream_destroy(ws); /* the program's stream stays alive: weft never owned it */
  if (native) cudaStreamSynchronize(native), cudaStreamDestroy(native);
  wf_shutdown();
  printf("%s\n", passed ? "external_stream: OK" : "external_stream: FAILED");
  return passed ? 0 : 1;
}

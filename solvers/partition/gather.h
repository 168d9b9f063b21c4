/* Gathering partitions' owned rows onto one device in global-id order (the solvers'
 * copy_state/copy_positions over N partitions, the world's health and readback): per partition,
 * a copy of its owned rows (positions, velocities) and of their uint32 global ids into a staging
 * buffer on the destination device, then a scatter kernel by id (gather_kernels.h) into the
 * destination buffers. Nothing travels through the host, and the copies are peer copies where
 * the partitions' devices differ from the destination.
 *
 * Ordering: the gather's stream waits for every partition's stream (view.stream) before its
 * copies, and every partition's stream waits for the copies before its next work, so a frame never
 * overwrites rows the gather still reads; the destination buffers' last user is the gather's
 * stream (wf_buffer_touch). The staging buffer is the gather's own: one gather at a time.
 */
#ifndef WEFT_SOLVERS_PARTITION_GATHER_H
#define WEFT_SOLVERS_PARTITION_GATHER_H

#include "partition.h"

typedef struct wfpt_gather wfpt_gather;

/* Room for `rows` rows on dev; the gather's work is enqueued on stream (on dev). */
wf_status wfpt_gather_create(wf_device *dev, wf_stream *stream, uint32_t rows, wfpt_gather **out);
void wfpt_gather_destroy(wfpt_gather *g);

/* Enqueues the gather of n partitions' owned rows (views[p].rows from views[p].pos and .vel, ids
 * from views[p].ids or first + i) into pos (and vel, unless NULL: positions only), rows of 16
 * bytes in global-id order, `rows` of them. Fails, naming the partition, when the owned rows do
 * not fit the staging buffer or a view lacks its buffers. */
wf_status wfpt_gather_enqueue(wfpt_gather *g, const wf_partition_view *views, int n, wf_buffer *pos,
                              wf_buffer *vel, uint32_t rows);

#endif

/* A video file from RGBA frames (`weft run --video`), encoded through FFmpeg's libraries
 * (libavcodec, libavformat, libswscale): H.264 (libx264) when the FFmpeg build has it, else
 * MPEG-4 part 2; pixel format yuv420p (what players expect); the container from the file's
 * extension (.mp4, .mkv, .mov, .avi, ...). Written under a temporary name in the same directory
 * and renamed at wf_cli_video_close, so a failed or abandoned video never lies under the name
 * asked for. Optional at build time (WEFT_HAVE_VIDEO, pkg-config finds FFmpeg): without it,
 * wf_cli_video_open says so and returns 2. */
#ifndef WEFT_CLI_VIDEO_H
#define WEFT_CLI_VIDEO_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wf_cli_video wf_cli_video;

/* Opens a video of width x height frames (odd sizes are cropped by one pixel to even) at `fps`
 * frames per second. On failure prints why (prefixed with `who`, naming the path) and returns the
 * exit code: 2 for a path that cannot be written or a container that is not known, or when weft
 * was built without FFmpeg; 1 otherwise. */
int wf_cli_video_open(const char *who, const char *path, int width, int height, double fps,
                      wf_cli_video **out);
/* Encodes one frame: width*height*4 bytes RGBA, first row at the top. Prints why on failure and
 * returns non-zero. */
int wf_cli_video_frame(wf_cli_video *v, const uint8_t *rgba);
/* keep: flushes the encoder, writes the trailer and renames the file to its path (returns
 * non-zero, after printing why, when that fails); otherwise removes the temporary file. NULL is
 * ignored. */
int wf_cli_video_close(wf_cli_video *v, bool keep);
/* The encoder used ("libx264", "mpeg4"). */
const char *wf_cli_video_codec(const wf_cli_video *v);

#endif

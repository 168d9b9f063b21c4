/* Pictures of a world for `weft view` and `weft run --render`: the scene's camera, lights,
 * colliders and colours turned into a wf_render_scene (viewer.h) once, and per frame the objects'
 * positions (from the readback ring or from a download) filled in. Only built with the viewer
 * (WEFT_VIEWER). */
#ifndef WEFT_CLI_RENDER_FRAMES_H
#define WEFT_CLI_RENDER_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/world.h"

#ifdef WEFT_HAVE_VIEWER
#include "viewer.h"

/* The colour of object i (emitters first, then cloths, as in the world) is
 * wf_cli_palette[i % WF_CLI_PALETTE_N], opaque. */
enum { WF_CLI_PALETTE_N = 6 };
extern const float wf_cli_palette[WF_CLI_PALETTE_N][3];

typedef struct wf_cli_frames wf_cli_frames;

/* Builds the fixed part of the pictures of world w made from scene sc: colliders, the camera (the
 * scene's; when the scene has the default camera, one that frames the objects' current bounds and
 * the bounded colliders), lights (a directional light shines along its direction; a point light
 * from its position towards the centre of the objects; color x intensity), background, colour
 * mode (render.color_by), one colour per object. `buffers` sets of per-frame arrays are kept, so
 * that that many frames can be held at once. Downloads the current state (for the bounds). */
wf_status wf_cli_frames_create(const wf_scene *sc, wf_world *w, int buffers, wf_cli_frames **out);
void wf_cli_frames_destroy(wf_cli_frames *f);
/* The fill light added to a scene's own lights: WF_CLI_FILL_FRACTION of the first light's colour
 * from the direction wf_cli_fill_direction gives for the first light's (both towards the light):
 * (-x, |y| / 2, -z), or (1, 0.5, 0) for a light straight overhead. */
#define WF_CLI_FILL_FRACTION 0.3f
void wf_cli_fill_direction(const float key[3], float out[3]);
/* Fills *out for simulation frame `frame` whose positions are pos[i] (and velocities vel[i],
 * which may be NULL, for colour by speed), using buffer set `buffer`. An object without
 * velocities (the readback ring's cloths) gets the speed of its points between the frame filled
 * before and this one (|dx| / elapsed time; 0 for the first, or after a reset: frame not newer).
 * The pointers in *out stay valid until that set is filled again. */
void wf_cli_frames_fill(wf_cli_frames *f, int buffer, int64_t frame, const float (*const *pos)[4],
                        const float (*const *vel)[4], wf_render_scene *out);
/* The buffer set whose arrays *frame (filled by wf_cli_frames_fill) points into; -1 if none. */
int wf_cli_frames_buffer_of(const wf_cli_frames *f, const wf_render_scene *frame);
/* The camera of the pictures. */
wf_render_camera wf_cli_frames_camera(const wf_cli_frames *f);

#endif /* WEFT_HAVE_VIEWER */

/* `weft run --render` (or "png" in outputs.formats): PNG frames <dir>/frame_NNNNNN.png drawn
 * headless (EGL; Mesa's llvmpipe without a GPU) at the scene's render.width x render.height,
 * numbered by the caller (consecutively from 0, so that ffmpeg's %06d pattern reads them). */
typedef struct wf_cli_render wf_cli_render;
/* Creates <out_dir>/render (out_dir NULL: no PNG files, for --video alone) and the headless
 * renderer. On failure prints why (prefixed with
 * `who`) and returns the exit code: 1, or 2 when weft was built without the viewer. */
int wf_cli_render_open(const char *who, const wf_scene *sc, wf_world *w, const char *out_dir,
                       wf_cli_render **out);
/* Downloads the world's current state (simulation frame `frame`, for messages) and writes it as
 * picture `number`, frame_<number>.png (atomically: a temporary file renamed). Prints why on
 * failure and returns non-zero. */
int wf_cli_render_frame(wf_cli_render *r, int64_t frame, int64_t number);
/* `weft run --video`: from now on each wf_cli_render_frame also encodes the picture into the
 * video at `path` (cli/video.h; fps frames per second). Prints why on failure and returns the
 * exit code (2: the path cannot be written, or no FFmpeg). */
int wf_cli_render_video(wf_cli_render *r, const char *path, double fps);
/* Ends the video: keep renames it to its path, else it is removed. Returns non-zero (after
 * printing why) when keeping fails. */
int wf_cli_render_finish(wf_cli_render *r, bool keep);
/* Frees r; a video not finished is removed. */
void wf_cli_render_close(wf_cli_render *r);

#endif

/* `weft run --video` (video.h): RGBA frames encoded through FFmpeg's libraries. */
#define _POSIX_C_SOURCE 200809L
#include "video.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WEFT_HAVE_VIDEO
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

struct wf_cli_video {
  const char *who;
  char *path, *tmp;
  int in_w, w, h; /* the frames given; the video's (even) */
  AVFormatContext *fmt;
  AVCodecContext *enc;
  AVStream *st;
  AVFrame *frame;
  AVPacket *pkt;
  struct SwsContext *sws;
  int64_t pts;
  bool opened_io;
};

static int av_fail(wf_cli_video *v, const char *what, int err) {
  char msg[AV_ERROR_MAX_STRING_SIZE] = "";
  av_strerror(err, msg, sizeof msg);
  fprintf(stderr, "%s: --video '%s': %s: %s\n", v->who, v->path, what, msg);
  return 1;
}

/* Sends a frame (NULL: flush) and writes the packets that come out. */
static int encode(wf_cli_video *v, AVFrame *f) {
  int err = avcodec_send_frame(v->enc, f);
  if (err < 0) return av_fail(v, "encoding", err);
  for (;;) {
    err = avcodec_receive_packet(v->enc, v->pkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return 0;
    if (err < 0) return av_fail(v, "encoding", err);
    av_packet_rescale_ts(v->pkt, v->enc->time_base, v->st->time_base);
    v->pkt->stream_index = v->st->index;
    err = av_interleaved_write_frame(v->fmt, v->pkt);
    if (err < 0) return av_fail(v, "writing", err);
  }
}

static void video_free(wf_cli_video *v) {
  if (v->opened_io) avio_closep(&v->fmt->pb);
  if (v->tmp) unlink(v->tmp);
  sws_freeContext(v->sws);
  av_frame_free(&v->frame);
  av_packet_free(&v->pkt);
  avcodec_free_context(&v->enc);
  avformat_free_context(v->fmt);
  free(v->path), free(v->tmp), free(v);
}

int wf_cli_video_open(const char *who, const char *path, int width, int height, double fps,
                      wf_cli_video **out) {
  *out = NULL;
  wf_cli_video *v = calloc(1, sizeof *v);
  size_t n = strlen(path) + 32;
  if (v) v->path = strdup(path), v->tmp = malloc(n);
  if (!v || !v->path || !v->tmp) {
    fprintf(stderr, "%s: out of memory\n", who);
    if (v) free(v->path), free(v->tmp), free(v);
    return 1;
  }
  v->who = who;
  av_log_set_level(AV_LOG_ERROR); /* no encoder statistics on stderr: errors are ours to say */
  snprintf(v->tmp, n, "%s.tmp.%ld", path, (long)getpid());
  v->in_w = width, v->w = width & ~1, v->h = height & ~1;
  char *tmp = v->tmp;
  v->tmp = NULL; /* nothing to remove yet */
  if (v->w < 2 || v->h < 2 || !(fps > 0.0)) {
    fprintf(stderr, "%s: --video '%s': %d x %d pixels at %g frames/s cannot be encoded\n", who,
            path, width, height, fps);
    free(tmp), video_free(v);
    return 2;
  }
  /* the container from the name asked for (the temporary one has another extension) */
  if (avformat_alloc_output_context2(&v->fmt, NULL, NULL, path) < 0 || !v->fmt) {
    fprintf(stderr,
            "%s: --video '%s': no container for this file name (use .mp4, .mkv, .mov or .avi)\n",
            who, path);
    free(tmp), video_free(v);
    return 2;
  }
  /* a .gif: FFmpeg's GIF encoder on 8-bit RGB (3-3-2, no palette search: small and plain) */
  bool gif = v->fmt->oformat->video_codec == AV_CODEC_ID_GIF;
  enum AVPixelFormat pix = gif ? AV_PIX_FMT_RGB8 : AV_PIX_FMT_YUV420P;
  const AVCodec *codec =
      gif ? avcodec_find_encoder(AV_CODEC_ID_GIF) : avcodec_find_encoder_by_name("libx264");
  if (!gif &&
      (!codec || avformat_query_codec(v->fmt->oformat, codec->id, FF_COMPLIANCE_NORMAL) != 1))
    codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
  if (!codec) {
    fprintf(stderr, "%s: --video '%s': this FFmpeg has neither libx264 nor an MPEG-4 encoder\n",
            who, path);
    free(tmp), video_free(v);
    return 2;
  }
  v->st = avformat_new_stream(v->fmt, NULL);
  v->enc = avcodec_alloc_context3(codec);
  v->frame = av_frame_alloc();
  v->pkt = av_packet_alloc();
  v->sws =
      sws_getContext(v->w, v->h, AV_PIX_FMT_RGBA, v->w, v->h, pix, SWS_BILINEAR, NULL, NULL, NULL);
  if (!v->st || !v->enc || !v->frame || !v->pkt || !v->sws) {
    fprintf(stderr, "%s: --video '%s': out of memory\n", who, path);
    free(tmp), video_free(v);
    return 1;
  }
  AVRational rate = av_d2q(fps, 100000);
  v->enc->width = v->w, v->enc->height = v->h;
  v->enc->pix_fmt = pix;
  v->enc->time_base = av_inv_q(rate);
  v->enc->framerate = rate;
  v->enc->gop_size = 30;
  if (v->fmt->oformat->flags & AVFMT_GLOBALHEADER) v->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  if (gif) {
    /* no options: every frame whole, looped by the muxer */
  } else if (codec->id == AV_CODEC_ID_H264) {
    av_opt_set(v->enc->priv_data, "preset", "veryfast", 0);
    av_opt_set(v->enc->priv_data, "crf", "20", 0);
  } else { /* MPEG-4 part 2 at a fixed quantiser: near lossless for flat-shaded pictures */
    v->enc->flags |= AV_CODEC_FLAG_QSCALE;
    v->enc->global_quality = FF_QP2LAMBDA * 3;
  }
  v->st->time_base = v->enc->time_base;
  v->st->avg_frame_rate = rate;
  int err = avcodec_open2(v->enc, codec, NULL);
  if (err >= 0) err = avcodec_parameters_from_context(v->st->codecpar, v->enc);
  if (err < 0) {
    av_fail(v, codec->name, err);
    free(tmp), video_free(v);
    return 1;
  }
  v->frame->format = pix, v->frame->width = v->w, v->frame->height = v->h;
  if ((err = av_frame_get_buffer(v->frame, 0)) < 0) {
    av_fail(v, "frame", err);
    free(tmp), video_free(v);
    return 1;
  }
  if ((err = avio_open(&v->fmt->pb, tmp, AVIO_FLAG_WRITE)) < 0) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(err, msg, sizeof msg);
    fprintf(stderr, "%s: --video '%s': cannot write it: %s\n", who, path, msg);
    free(tmp), video_free(v);
    return 2;
  }
  v->opened_io = true, v->tmp = tmp;
  if ((err = avformat_write_header(v->fmt, NULL)) < 0) {
    av_fail(v, "writing the header", err);
    video_free(v);
    return 1;
  }
  *out = v;
  return 0;
}

int wf_cli_video_frame(wf_cli_video *v, const uint8_t *rgba) {
  int err = av_frame_make_writable(v->frame);
  if (err < 0) return av_fail(v, "frame", err);
  const uint8_t *src[1] = {rgba};
  int stride[1] = {4 * v->in_w};
  sws_scale(v->sws, src, stride, 0, v->h, v->frame->data, v->frame->linesize);
  v->frame->pts = v->pts++;
  return encode(v, v->frame);
}

int wf_cli_video_close(wf_cli_video *v, bool keep) {
  if (!v) return 0;
  int rc = 0;
  if (keep) {
    rc = encode(v, NULL);
    int err = rc ? 0 : av_write_trailer(v->fmt);
    if (err < 0) rc = av_fail(v, "writing the trailer", err);
    avio_closep(&v->fmt->pb);
    v->opened_io = false;
    if (!rc && rename(v->tmp, v->path) != 0) {
      fprintf(stderr, "%s: --video '%s': cannot rename '%s' to it: %s\n", v->who, v->path, v->tmp,
              strerror(errno));
      rc = 1;
    }
    if (!rc) free(v->tmp), v->tmp = NULL; /* renamed: nothing to remove */
  }
  video_free(v);
  return rc;
}

const char *wf_cli_video_codec(const wf_cli_video *v) { return v ? v->enc->codec->name : ""; }

#else

struct wf_cli_video {
  int unused;
};

int wf_cli_video_open(const char *who, const char *path, int width, int height, double fps,
                      wf_cli_video **out) {
  (void)width, (void)height, (void)fps;
  *out = NULL;
  fprintf(stderr,
          "%s: --video '%s': this weft was built without FFmpeg (libavcodec, libavformat, "
          "libswscale, libavutil were not found by pkg-config when it was configured; "
          "scripts/deps.sh installs them)\n",
          who, path);
  return 2;
}
int wf_cli_video_frame(wf_cli_video *v, const uint8_t *rgba) {
  (void)v, (void)rgba;
  return 1;
}
int wf_cli_video_close(wf_cli_video *v, bool keep) {
  (void)v, (void)keep;
  return 0;
}
const char *wf_cli_video_codec(const wf_cli_video *v) {
  (void)v;
  return "";
}

#endif

/* `weft info`: what this build and this machine offer — version, backends compiled, CUDA driver
 * and runtime, every device and the peer-access matrix between CUDA devices. Text by default,
 * one JSON object with --json. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weft/weft.h"

#define GIB      (1024.0 * 1024.0 * 1024.0)
#define MAX_DEVS 64

void wf_cmd_info_usage(FILE *f) {
  fputs("usage: weft info [--json]\n"
        "\n"
        "Shows the weft version, the backends this build has, the CUDA driver and runtime, every\n"
        "device (memory, compute capability, multiprocessors) and which CUDA devices can access\n"
        "each other's memory.\n"
        "\n"
        "options:\n"
        "  --json      print one JSON object instead of text\n"
        "  -h, --help  show this help\n"
        "\n"
        "Exit status: 0 ok, 1 runtime failure (the runtime could not start), 2 bad usage.\n",
        f);
}

/* 13000 -> "13.0", 12040 -> "12.4"; 0 -> "none". */
static const char *cuda_version_str(int v, char *buf, size_t n) {
  if (v <= 0)
    snprintf(buf, n, "none");
  else
    snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
  return buf;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void print_text(const wf_runtime_info *rt, const wf_device_info *info, int n,
                       wf_device **cuda, int n_cuda) {
  char drv[16], run[16];
  printf("weft %s\n", WF_VERSION_STRING);
  printf("backends   cpu: yes (always; %d thread%s a kernel, WEFT_CPU_THREADS)\n", rt->cpu_threads,
         rt->cpu_threads == 1 ? "" : "s");
  if (rt->cuda_compiled)
    printf("           cuda: yes (architectures %s)\n",
           rt->cuda_architectures[0] ? rt->cuda_architectures : "unknown");
  else
    printf("           cuda: no (built without the CUDA backend)\n");
  bool cuda_aware = false;
  char mpi[128];
  if (wf_mpi_available(&cuda_aware, mpi, sizeof mpi))
    printf("           mpi: yes (%s; CUDA-aware: %s)\n", mpi, cuda_aware ? "yes" : "no");
  else
    printf("           mpi: no (built without MPI: WEFT_MPI)\n");
  if (rt->cuda_compiled) {
    printf("cuda       driver %s, runtime %s, %d device%s found\n",
           cuda_version_str(rt->cuda_driver_version, drv, sizeof drv),
           cuda_version_str(rt->cuda_runtime_version, run, sizeof run), rt->cuda_devices_found,
           rt->cuda_devices_found == 1 ? "" : "s");
  }
  if (n_cuda == 0) {
    const char *why = rt->cuda_status[0]  ? rt->cuda_status
                      : rt->cuda_compiled ? "none found"
                                          : "this build has no CUDA backend";
    /* the status may already say it */
    if (strncmp(why, "no CUDA device", 14) == 0)
      printf("%s\n", why);
    else
      printf("no CUDA device: %s\n", why);
  } else if (rt->cuda_status[0]) {
    printf("note       %s\n", rt->cuda_status);
  }

  printf("\ndevices (%d)\n", n);
  for (int i = 0; i < n; i++) {
    const wf_device_info *d = &info[i];
    printf("  %-8s %s\n", d->name, d->product[0] ? d->product : "(unknown product)");
    if (d->is_cuda) {
      printf("           compute capability %d.%d, %d multiprocessors", d->cc_major, d->cc_minor,
             d->multiprocessors);
      if (d->pci_bus >= 0) printf(", PCI bus %02x", d->pci_bus);
      printf("\n");
    } else {
      printf("           %d hardware threads\n", d->multiprocessors);
    }
    printf("           memory %.1f GiB total, %.1f GiB free\n", (double)d->total_memory / GIB,
           (double)d->free_memory / GIB);
  }

  if (n_cuda >= 2) {
    printf("\npeer access (row can access column's memory)\n  %-8s", "");
    for (int j = 0; j < n_cuda; j++)
      printf(" %7s", wf_device_name(cuda[j]));
    printf("\n");
    for (int i = 0; i < n_cuda; i++) {
      printf("  %-8s", wf_device_name(cuda[i]));
      for (int j = 0; j < n_cuda; j++)
        printf(" %7s", i == j ? "-" : wf_device_can_access_peer(cuda[i], cuda[j]) ? "yes" : "no");
      printf("\n");
    }
  } else if (n_cuda == 1) {
    printf("\npeer access: one CUDA device, nothing to pair\n");
  }
}

static void print_json(const wf_runtime_info *rt, const wf_device_info *info, int n,
                       wf_device **cuda, int n_cuda) {
  printf("{\n  \"version\": ");
  json_string(stdout, WF_VERSION_STRING);
  printf(",\n  \"backends\": {\"cpu\": true, \"cuda\": %s},\n",
         rt->cuda_compiled ? "true" : "false");
  printf("  \"cuda\": {\"architectures\": ");
  json_string(stdout, rt->cuda_architectures);
  printf(", \"driver_version\": %d, \"runtime_version\": %d, \"devices_found\": %d, "
         "\"status\": ",
         rt->cuda_driver_version, rt->cuda_runtime_version, rt->cuda_devices_found);
  json_string(stdout, rt->cuda_status);
  printf("},\n  \"devices\": [");
  for (int i = 0; i < n; i++) {
    const wf_device_info *d = &info[i];
    printf("%s\n    {\"name\": ", i ? "," : "");
    json_string(stdout, d->name);
    printf(", \"product\": ");
    json_string(stdout, d->product);
    printf(", \"is_cuda\": %s, \"ordinal\": %d, ", d->is_cuda ? "true" : "false", d->ordinal);
    if (d->is_cuda)
      printf("\"compute_capability\": \"%d.%d\", ", d->cc_major, d->cc_minor);
    else
      printf("\"compute_capability\": null, ");
    printf("\"multiprocessors\": %d, \"total_memory\": %zu, \"free_memory\": %zu, "
           "\"pci_bus\": %d}",
           d->multiprocessors, d->total_memory, d->free_memory, d->pci_bus);
  }
  printf("\n  ],\n  \"peer_access\": [");
  for (int i = 0; i < n_cuda; i++) {
    printf("%s[", i ? ", " : "");
    for (int j = 0; j < n_cuda; j++)
      printf("%s%s", j ? ", " : "",
             i == j || wf_device_can_access_peer(cuda[i], cuda[j]) ? "true" : "false");
    printf("]");
  }
  printf("]\n}\n");
}

int wf_cmd_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      wf_cmd_info_usage(stdout);
      return WF_EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      wf_cli_unknown_option("weft info", argv[i], wf_cmd_info_usage);
      return WF_EXIT_USAGE;
    }
  }

  wf_init_desc desc = {0};
  desc.log_level = WF_LOG_WARN;
  desc.log = wf_cli_log;
  int env = wf_cli_init_from_env(&desc, "weft info");
  if (env != WF_EXIT_OK) return env;
  wf_status st = wf_init(&desc);
  if (st < 0) {
    fprintf(stderr, "weft info: wf_init failed: %s\n  %s\n", wf_status_str(st), wf_last_error());
    return WF_EXIT_FAILURE;
  }

  static wf_device_info info[MAX_DEVS];
  wf_device *devs[MAX_DEVS], *cuda[MAX_DEVS];
  int n = wf_device_count(), n_cuda = 0;
  if (n > MAX_DEVS) n = MAX_DEVS;
  for (int i = 0; i < n; i++) {
    devs[i] = wf_device_at(i);
    if (!devs[i]) {
      fprintf(stderr, "weft info: wf_device_at(%d) returned NULL with %d devices\n", i, n);
      wf_shutdown();
      return WF_EXIT_FAILURE;
    }
    st = wf_device_info_get(devs[i], &info[i]);
    if (st < 0) {
      fprintf(stderr, "weft info: wf_device_info_get(%s) failed: %s\n  %s\n",
              wf_device_name(devs[i]), wf_status_str(st), wf_last_error());
      wf_shutdown();
      return WF_EXIT_FAILURE;
    }
    if (info[i].is_cuda) cuda[n_cuda++] = devs[i];
  }
  wf_runtime_info rt;
  memset(&rt, 0, sizeof rt);
  wf_runtime_info_get(&rt);

  if (json)
    print_json(&rt, info, n, cuda, n_cuda);
  else
    print_text(&rt, info, n, cuda, n_cuda);
  wf_shutdown();
  return fflush(stdout) == 0 ? WF_EXIT_OK : WF_EXIT_FAILURE;
}

/* A stand-in for libnvidia-ml.so.1 with the calls gpu_energy.cc makes, for machines without an
 * NVIDIA driver: FAKE_NVML_DEVICES GPUs (default 2) named "Fake GPU <i>", each drawing
 * FAKE_NVML_WATTS (default 250) since nvmlInit_v2, on a counter that starts at 10^9 mJ as a
 * driver's does after days of uptime. FAKE_NVML_NO_ENERGY=1 answers the energy call with
 * NVML_ERROR_NOT_SUPPORTED (3), as pre-Volta GPUs do. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double g_start_s;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v != NULL && *v != '\0' ? atoi(v) : fallback;
}

int nvmlInit_v2(void) {
  g_start_s = now_s();
  return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = (unsigned int)env_int("FAKE_NVML_DEVICES", 2);
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  *device = (void*)(size_t)(index + 1);
  return index < (unsigned int)env_int("FAKE_NVML_DEVICES", 2) ? 0 : 2; /* NVML_ERROR_INVALID_ARGUMENT */
}
int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  snprintf(name, length, "Fake GPU %u", (unsigned int)((size_t)device - 1));
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void* device, unsigned long long* millijoules) {
  (void)device;
  if (env_int("FAKE_NVML_NO_ENERGY", 0)) return 3; /* NVML_ERROR_NOT_SUPPORTED */
  *millijoules = 1000000000ULL + (unsigned long long)((now_s() - g_start_s) * 1000.0 * env_int("FAKE_NVML_WATTS", 250));
  return 0;
}

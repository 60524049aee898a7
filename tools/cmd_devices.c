/* cmd_devices.c - `encore devices`: the devices encore can run on, with the
 * name each takes in --device, and the one chosen by default. */
#include <stdio.h>
#include <string.h>

#include "api/encore_tools.h"
#include "cli.h"
#include "commands.h"

static const char devices_help[] =
    "usage: encore devices\n\n"
    "List the devices encore can run on: the CPU, and every Vulkan device with\n"
    "its type and device-local memory. Pass the name in the first column to\n"
    "--device (or ENCORE_DEVICE); `vulkan` alone picks the one marked default\n"
    "(a discrete GPU first, then integrated, then a CPU implementation).\n";

enum { DEVICES_MAX = 16 };

static int devices__vulkan(void)
{
#ifdef ENCORE_HAVE_VULKAN
    vk_device_info d[DEVICES_MAX];
    int n = 0;
    if (vk_devices_list(d, DEVICES_MAX, &n) != ENC_OK) {
        printf("vulkan      none: %s\n", enc_last_error());
        return CLI_OK;
    }
    for (int i = 0; i < n && i < DEVICES_MAX; i++) {
        char name[16];
        snprintf(name, sizeof name, "vulkan:%d", i);
        printf("%-11s %s (%s, Vulkan %u.%u), %.0f MiB device-local, subgroup arithmetic %s%s\n", name,
               d[i].name, d[i].type, (d[i].api_version >> 22) & 0x7f, (d[i].api_version >> 12) & 0x3ff,
               (double)d[i].device_local / (1024.0 * 1024.0), d[i].subgroup_arith ? "yes" : "no",
               d[i].is_default ? "  [default for --device vulkan]" : "");
    }
#else
    printf("vulkan      not built (configure with -DENCORE_VULKAN=ON; needs libvulkan-dev and glslc)\n");
#endif
    return CLI_OK;
}

int cmd_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("%s", devices_help);
            return CLI_OK;
        }
        cli_error("devices", "unknown option '%s' (try --help)", argv[i]);
        return CLI_BAD_ARGS;
    }
    printf("%-11s %d threads, %s kernels\n", "cpu", enc_cpu_count(), cpu_isa_name(cpu_kernels_init()));
    return devices__vulkan();
}

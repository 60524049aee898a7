/* test_lsan_catches_vulkan.c - run only in the sanitizer build: open the
 * Vulkan device (which makes Mesa's lavapipe leak inside the driver), close
 * it, then leak 4242 bytes of our own. The test passes when LeakSanitizer's
 * summary counts exactly that one leak of ours: the driver's leak is
 * suppressed (tests/lsan.supp) and encore's are still caught. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"

static void *volatile leaked;

int main(void)
{
    backend *be;
    if (backend_create_named("vulkan", 0, &be) != ENC_OK) {
        fprintf(stderr, "test_lsan_catches_vulkan: no Vulkan device: %s\n", enc_last_error());
        return 1;
    }
    backend_destroy(be);
    leaked = malloc(4242);
    leaked = NULL; /* the only pointer gone: a direct leak */
    return 0;
}

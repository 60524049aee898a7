/* isa_fail.h - the failure report of the C kernel tests that loop over the
 * CPU's ISAs: fail(fmt, ...) prints "FAIL [isa] message", counts it in
 * g_failures and stops the test after 40; g_isa names the ISA under test;
 * isa_for_each runs a check on each ISA the CPU has. */
#ifndef ENC_TESTS_ISA_FAIL_H
#define ENC_TESTS_ISA_FAIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/kernels_impl.h"

static int g_failures;
static const char *g_isa = "?";

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL [%s] ", g_isa);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (++g_failures > 40) {
        fprintf(stderr, "too many failures\n");
        exit(1);
    }
}

/* fn(isa) with the kernels forced to each ISA this CPU runs, g_isa naming
 * it, and a line per ISA saying what (`what`) passed or failed; the chosen
 * ISA restored after. Returns the number of ISAs run. */
static inline int isa_for_each(void (*fn)(cpu_isa isa), const char *what)
{
    cpu_isa chosen = cpu_kernels_init();
    int n = 0;
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        cpu_isa isa = (cpu_isa)i;
        g_isa = cpu_isa_name(isa);
        if (!cpu_kernels_force_isa(isa)) {
            printf("[%s] not supported by this CPU: not run\n", g_isa);
            continue;
        }
        int before = g_failures;
        fn(isa);
        printf("[%s] %s: %s\n", g_isa, g_failures == before ? "ok" : "FAILED", what);
        n++;
    }
    cpu_kernels_force_isa(chosen);
    return n;
}

/* main's exit status: 1 after any failure or when no ISA ran, else 0. */
static inline int isa_verdict(int n_isas)
{
    if (g_failures || n_isas == 0) {
        printf("%d failures, %d ISAs run\n", g_failures, n_isas);
        return 1;
    }
    printf("all ok\n");
    return 0;
}

#endif

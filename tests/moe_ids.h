/* moe_ids.h - expert choices for the Vulkan matmul_id grouping tests
 * (test_vulkan_ops, test_vulkan_quant): ids [T, k] as functions of (token,
 * slot) over E = 6 experts that exercise the grouping's corners. */
#ifndef ENC_TESTS_MOE_IDS_H
#define ENC_TESTS_MOE_IDS_H

#include <stdint.h>

enum { MOE_IDS_EXPERTS = 6 };

/* Expert 2 chosen by no token, ties (both slots of tokens 0, 3, 6, ... on
 * one expert), a bad id (token 5, slot 1). */
static inline int32_t moe_ids_mixed(int64_t t, int64_t s)
{
    if (t == 5 && s == 1) return -1;
    int32_t e = (int32_t)((t * 3 + s * (t % 3 != 0)) % 5);
    return e >= 2 ? e + 1 : e;
}

/* Every slot of every token on expert 4. */
static inline int32_t moe_ids_one_expert(int64_t t, int64_t s)
{
    (void)t, (void)s;
    return 4;
}

#endif

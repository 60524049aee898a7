/* vk_profile.c - ENCORE_VK_PROFILE=1: where the device time goes, per op.
 *
 * Eager ops are timed by their own submission's two timestamps
 * (vk_submit_wait). Inside a recording, a timestamp follows every node (its
 * dispatches and barriers; a step input's copy counts to the node that first
 * reads it), in a query pool of the recording's own:
 *
 *   query 0          the recording's start
 *   query i (i > 0)  after node i - 1, whose op is ops[i - 1]
 *
 * Every replay reads the pool back and adds each node's share (query i
 * minus query i - 1) to its op. Both tables are printed when the backend is
 * destroyed. Without the variable none of this is recorded. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/vulkan/vk_impl.h"

enum { VK__PROFILE_MAX_QUERIES = 1 << 15 }; /* nodes past this in one recording go untimed */

struct vk_rec_profile {
    VkQueryPool pool;
    int n;         /* queries written */
    graph_op *ops; /* [VK__PROFILE_MAX_QUERIES - 1] */
    uint64_t *ts;  /* [VK__PROFILE_MAX_QUERIES], read back after a replay */
};

void vk_profile_rec_free(vk_ctx *c, vk_rec_profile *p)
{
    if (!p) return;
    if (p->pool) vkDestroyQueryPool(c->dev, p->pool, NULL);
    free(p->ops);
    free(p->ts);
    free(p);
}

enc_status vk_profile_rec_begin(vk_ctx *c, VkCommandBuffer cmd, vk_rec_profile **out)
{
    *out = NULL;
    if (!c->profile || !c->timestamps) return ENC_OK;
    vk_rec_profile *p = calloc(1, sizeof *p);
    if (p) p->ops = malloc((VK__PROFILE_MAX_QUERIES - 1) * sizeof *p->ops);
    if (p) p->ts = malloc(VK__PROFILE_MAX_QUERIES * sizeof *p->ts);
    if (!p || !p->ops || !p->ts) {
        vk_profile_rec_free(c, p);
        return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: a recording's profile");
    }
    VkQueryPoolCreateInfo qp = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = VK__PROFILE_MAX_QUERIES,
    };
    VkResult r = vkCreateQueryPool(c->dev, &qp, NULL, &p->pool);
    if (r != VK_SUCCESS) {
        vk_profile_rec_free(c, p);
        return vk_fail(r, "vkCreateQueryPool (profile)");
    }
    vkCmdResetQueryPool(cmd, p->pool, 0, VK__PROFILE_MAX_QUERIES);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->pool, 0);
    p->n = 1;
    *out = p;
    return ENC_OK;
}

void vk_profile_rec_node(vk_rec_profile *p, VkCommandBuffer cmd, graph_op op)
{
    if (!p || p->n == VK__PROFILE_MAX_QUERIES) return;
    p->ops[p->n - 1] = op;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->pool, (uint32_t)p->n);
    p->n++;
}

void vk_profile_rec_collect(vk_ctx *c, const vk_rec_profile *p)
{
    if (!p || p->n < 2) return;
    if (vkGetQueryPoolResults(c->dev, p->pool, 0, (uint32_t)p->n, (size_t)p->n * sizeof *p->ts,
                              p->ts, sizeof *p->ts, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
        return;
    double period = (double)c->props.limits.timestampPeriod * 1e-9;
    for (int i = 1; i < p->n; i++) {
        c->rec_op_seconds[p->ops[i - 1]] += (double)(p->ts[i] - p->ts[i - 1]) * period;
        c->rec_op_count[p->ops[i - 1]]++;
    }
    c->rec_seconds += (double)(p->ts[p->n - 1] - p->ts[0]) * period;
    c->rec_replays++;
}

static void vk__print_table(const char *title, const double *sec, const int64_t *count)
{
    double total = 0;
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        total += sec[op];
    fprintf(stderr, "vulkan profile (%s; device time):\n", title);
    for (int op = 0; op < GRAPH_OP_COUNT; op++)
        if (count[op])
            fprintf(stderr, "  %-16s %8lld calls %10.3f ms %8.1f us/call %5.1f%%\n",
                    graph_op_name((graph_op)op), (long long)count[op], sec[op] * 1e3,
                    sec[op] * 1e6 / (double)count[op], total > 0 ? 100 * sec[op] / total : 0.0);
}

void vk_profile_print(const vk_ctx *c)
{
    vk__print_table("eager ops", c->op_seconds, c->op_count);
    if (c->rec_replays == 0) return;
    vk__print_table("nodes inside replayed recordings", c->rec_op_seconds, c->rec_op_count);
    fprintf(stderr, "  %lld replays, %.3f ms of device time each\n", (long long)c->rec_replays,
            c->rec_seconds * 1e3 / (double)c->rec_replays);
}

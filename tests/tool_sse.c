/* tool_sse.c - a reply's text through the server's tool-call parser and
 * reply objects, for tests/tool_stream_client.mjs: feeds the text to
 * tool_parser_put in pieces of STEP bytes and writes the SSE stream a chat
 * request with tools gets (a role chunk, content chunks, two chunks per call
 * from oai_response_tool_call_chunk, the finish chunk, [DONE]) to SSE_OUT, and
 * the whole reply (oai_response_body) to JSON_OUT.
 *
 *   tool_sse TEXT STEP SSE_OUT JSON_OUT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai_response.h"
#include "server/tool_calls.h"

static const oai_head head = {.kind = OAI_CHAT, .id = "chatcmpl-test", .created = 1, .model = "m"};

static void sse(FILE *f, char *json)
{
    fprintf(f, "data: %s\n\n", json);
    free(json);
}

static void call_of(const tool_parser *p, size_t k, oai_tool_call *out)
{
    static char ids[64][40];
    snprintf(ids[k % 64], sizeof ids[0], "call_%zu", k);
    *out = (oai_tool_call){(int)k, ids[k % 64], p->calls[k].name, p->calls[k].arguments};
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: tool_sse TEXT STEP SSE_OUT JSON_OUT\n");
        return 2;
    }
    const char *text = argv[1];
    size_t len = strlen(text), step = (size_t)atoi(argv[2]), sent = 0, calls_sent = 0;
    FILE *f = fopen(argv[3], "w"), *g = fopen(argv[4], "w");
    if (!f || !g || step == 0) return 1;
    tool_parser p;
    tool_parser_init(&p);
    char *content = NULL;
    size_t n_content = 0;
    oai_choice role = {.text = "", .role = 1};
    sse(f, oai_response_chunk(&head, 0, &role));
    for (size_t at = 0; at < len || at == 0; at += step) {
        size_t n = len - at < step ? len - at : step;
        if (!tool_parser_put(&p, text + at, n, at + n >= len, &content, &n_content)) return 1;
        if (n_content > sent) {
            oai_choice c = {.text = content + sent};
            sse(f, oai_response_chunk(&head, 0, &c));
            sent = n_content;
        }
        for (; calls_sent < p.n_calls; calls_sent++) {
            oai_tool_call call;
            call_of(&p, calls_sent, &call);
            sse(f, oai_response_tool_call_chunk(&head, 0, &call, 0, NULL));
            sse(f, oai_response_tool_call_chunk(&head, 0, &call, 1, NULL));
        }
        if (at + n >= len) break;
    }
    const char *finish = p.n_calls ? "tool_calls" : "stop";
    oai_choice end = {.finish_reason = finish};
    sse(f, oai_response_chunk(&head, 0, &end));
    fprintf(f, "data: [DONE]\n\n");
    oai_tool_call *calls = calloc(p.n_calls + 1, sizeof *calls);
    for (size_t k = 0; k < p.n_calls; k++)
        call_of(&p, k, &calls[k]);
    oai_choice whole = {.text = n_content ? content : NULL,
                        .finish_reason = finish,
                        .tool_calls = calls,
                        .n_tool_calls = p.n_calls};
    oai_usage u = {0};
    char *body = oai_response_body(&head, &whole, 1, &u);
    fputs(body, g);
    free(body);
    free(calls);
    free(content);
    tool_parser_free(&p);
    return fclose(f) | fclose(g);
}

/* test_server_unit.c - the server's pieces that need no engine: request
 * parsing and validation, response JSON, the <think> splitter, UTF-8, the
 * Prometheus text, the header checks and the request read deadline. JSON
 * made here is parsed back with cJSON and checked field by field. */
#define _GNU_SOURCE /* MSG_DONTWAIT, usleep */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "fail_realloc.h" /* realloc_fail_in */
#include "server/http_deadline.h"
#include "server/http_guard.h"
#include "server/json_out.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/reasoning.h"


/* --- requests --------------------------------------------------------------------- */

static int parse(const char *body, oai_kind kind, oai_request *r, oai_error *err)
{
    return oai_request_parse(body, strlen(body), kind, NULL, r, err);
}

/* The body is refused with 400 naming `param` and saying `needle`. */
static void refused(const char *body, oai_kind kind, const char *param, const char *needle)
{
    oai_request r;
    oai_error err;
    memset(&err, 0, sizeof err);
    int ok = parse(body, kind, &r, &err);
    CHECK(!ok);
    if (ok) {
        fprintf(stderr, "  accepted: %.200s\n", body);
        oai_request_free(&r);
        return;
    }
    CHECK(err.http_status == 400);
    CHECK(!strcmp(err.param, param));
    CHECK(strstr(err.message, needle) != NULL);
    if (strcmp(err.param, param) || !strstr(err.message, needle))
        fprintf(stderr, "  %s -> param '%s' message '%s'\n", body, err.param, err.message);
}

static void test_completion_request(void)
{
    oai_request r;
    oai_error err;
    CHECK(parse("{\"model\":\"m\",\"prompt\":\"Hello\",\"max_tokens\":7,\"temperature\":0.5,"
                "\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"repetition_penalty\":1.1,"
                "\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,\"seed\":42,\"n\":3,"
                "\"stop\":[\"a\",\"bc\"],\"stop_token_ids\":[7,8],\"ignore_eos\":true,"
                "\"min_tokens\":2,\"logprobs\":3,\"skip_special_tokens\":false,\"echo\":false,"
                "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"user\":\"x\"}",
                OAI_COMPLETION, &r, &err));
    CHECK(!strcmp(r.model, "m") && r.n_prompts == 1 && !strcmp(r.prompts[0].text, "Hello") &&
          !r.prompts[0].ids);
    CHECK(r.max_tokens == 7 && r.n == 3 && r.seed_given && r.sampling.seed == 42);
    CHECK(r.sampling.temperature == 0.5 && r.sampling.top_p == 0.9 && r.sampling.top_k == 40);
    CHECK(r.sampling.min_p == 0.05 && r.sampling.repetition_penalty == 1.1);
    CHECK(r.sampling.presence_penalty == 0.5 && r.sampling.frequency_penalty == -0.5);
    CHECK(r.sampling.n_stop == 2 && !strcmp(r.sampling.stop[1], "bc"));
    CHECK(r.sampling.n_stop_token_ids == 2 && r.sampling.stop_token_ids[1] == 8);
    CHECK(r.sampling.ignore_eos && r.sampling.min_tokens == 2 && !r.sampling.skip_special_tokens);
    CHECK(r.logprobs && r.top_logprobs == 3 && r.sampling.logprobs && r.sampling.top_logprobs == 3);
    CHECK(!r.echo && r.stream && r.include_usage);
    oai_request_free(&r);

    /* defaults: OpenAI's temperature 1, nothing else on */
    CHECK(parse("{\"prompt\":[1,2,3]}", OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 1 && !r.prompts[0].text && r.prompts[0].n_ids == 3 &&
          r.prompts[0].ids[2] == 3 && !r.model);
    CHECK(r.max_tokens == 0 && r.n == 1 && !r.seed_given && !r.stream && !r.logprobs);
    CHECK(r.sampling.temperature == 1.0 && r.sampling.top_p == 1.0 && r.sampling.top_k == 0);
    CHECK(r.sampling.repetition_penalty == 1.0 && r.sampling.skip_special_tokens);
    CHECK(r.sampling.n_stop == 0 && !r.sampling.stop);
    oai_request_free(&r);

    /* a one-item array of a string or of ids; a single stop string; nulls are absent */
    CHECK(parse("{\"prompt\":[\"x\"],\"stop\":\"END\",\"max_tokens\":null,\"seed\":null}",
                OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 1 && !strcmp(r.prompts[0].text, "x") && r.sampling.n_stop == 1 &&
          !strcmp(r.sampling.stop[0], "END"));
    CHECK(r.max_tokens == 0 && !r.seed_given);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":[[4,5]]}", OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 1 && r.prompts[0].n_ids == 2 && r.prompts[0].ids[1] == 5);
    oai_request_free(&r);

    /* a batch: strings, token-id arrays, or both, in order */
    CHECK(parse("{\"prompt\":[\"a\",\"bc\",\"d\"],\"n\":2}", OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 3 && r.n == 2 && !strcmp(r.prompts[0].text, "a") &&
          !strcmp(r.prompts[1].text, "bc") && !strcmp(r.prompts[2].text, "d") && !r.prompts[2].ids);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":[[1,2],[3,4,5]]}", OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 2 && r.prompts[0].n_ids == 2 && r.prompts[1].n_ids == 3 &&
          r.prompts[1].ids[0] == 3 && !r.prompts[1].text);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":[\"a\",[7]]}", OAI_COMPLETION, &r, &err));
    CHECK(r.n_prompts == 2 && !strcmp(r.prompts[0].text, "a") && r.prompts[1].ids[0] == 7);
    oai_request_free(&r);
    {
        char big[8 * (OAI_MAX_PROMPTS + 1) + 32];
        int len = snprintf(big, sizeof big, "{\"prompt\":[");
        for (int i = 0; i < OAI_MAX_PROMPTS; i++)
            len += snprintf(big + len, sizeof big - (size_t)len, "%s\"p\"", i ? "," : "");
        snprintf(big + len, sizeof big - (size_t)len, "]}");
        CHECK(parse(big, OAI_COMPLETION, &r, &err) && r.n_prompts == OAI_MAX_PROMPTS);
        oai_request_free(&r);
        snprintf(big + len, sizeof big - (size_t)len, ",\"p\"]}");
        refused(big, OAI_COMPLETION, "prompt", "at most 256");
    }

    /* logit_bias: ids as strings to biases in [-100, 100], in the body's order; null and {} are
     * none */
    CHECK(parse("{\"prompt\":\"x\",\"logit_bias\":{\"7\":-100,\"151935\":2.5,\"0\":100}}",
                OAI_COMPLETION, &r, &err));
    CHECK(r.sampling.n_logit_bias == 3 && r.sampling.logit_bias == r.logit_bias);
    CHECK(r.logit_bias[0].id == 7 && r.logit_bias[0].bias == -100.0f);
    CHECK(r.logit_bias[1].id == 151935 && r.logit_bias[1].bias == 2.5f);
    CHECK(r.logit_bias[2].id == 0 && r.logit_bias[2].bias == 100.0f);
    oai_request_free(&r);
    /* a repeated id (spelled twice, a key may not be): the last bias wins, as in the Python
     * dict of OpenAI's and vLLM's servers */
    CHECK(parse("{\"prompt\":\"x\",\"logit_bias\":{\"7\":1,\"9\":2,\"07\":-3}}", OAI_COMPLETION, &r,
                &err));
    CHECK(r.sampling.n_logit_bias == 2 && r.logit_bias[0].id == 7 &&
          r.logit_bias[0].bias == -3.0f && r.logit_bias[1].id == 9);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"logit_bias\":{}}", OAI_COMPLETION, &r, &err));
    CHECK(r.sampling.n_logit_bias == 0 && !r.sampling.logit_bias);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logit_bias\":null}",
                OAI_CHAT, &r, &err));
    CHECK(r.sampling.n_logit_bias == 0);
    oai_request_free(&r);
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logit_bias\":[1]}", OAI_CHAT,
            "logit_bias", "must be an object");
    static const char *const bad_bias[][2] = {
        {"{\"abc\":1}", "'abc' is not one"}, {"{\"-1\":1}", "token ids"},
        {"{\"12x\":1}", "token ids"},        {"{\"4294967296\":1}", "token ids"},
        {"{\"7\":100.5}", "[-100, 100]"},     {"{\"7\":\"1\"}", "[-100, 100]"},
    };
    for (size_t i = 0; i < sizeof bad_bias / sizeof bad_bias[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"prompt\":\"x\",\"logit_bias\":%s}", bad_bias[i][0]);
        refused(body, OAI_COMPLETION, "logit_bias", bad_bias[i][1]);
    }
    {
        char body[301 * 12 + 64];
        int n = snprintf(body, sizeof body, "{\"prompt\":\"x\",\"logit_bias\":{");
        for (int i = 0; i < 301; i++)
            n += snprintf(body + n, sizeof body - (size_t)n, "%s\"%d\":1", i ? "," : "", i);
        snprintf(body + n, sizeof body - (size_t)n, "}}");
        refused(body, OAI_COMPLETION, "logit_bias", "at most 300");
        body[strlen(body) - 2] = 0; /* 300 entries are fine */
        strcpy(strrchr(body, ','), "}}");
        CHECK(parse(body, OAI_COMPLETION, &r, &err) && r.sampling.n_logit_bias == 300);
        oai_request_free(&r);
    }
    refused("{\"max_tokens\":3}", OAI_COMPLETION, "prompt", "required");
    /* U+0000 would cut a string short: refused, naming where it is */
    refused("{\"prompt\":\"a\\u0000b\"}", OAI_COMPLETION, "prompt", "U+0000");
    refused("{\"prompt\":\"x\",\"stop\":[\"ok\",\"\\u0000\"]}", OAI_COMPLETION, "stop[1]", "U+0000");
    refused("{\"model\":\"m\\\\\",\"prompt\":\"a\\u0000\"}", OAI_COMPLETION, "prompt", "U+0000");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
            "{\"role\":\"user\",\"content\":\"a\\u0000\"}]}", OAI_CHAT, "messages[1].content", "U+0000");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
            "{\"type\":\"text\",\"text\":\"\\u0000\"}]}]}", OAI_CHAT, "messages[0].content[1].text",
            "U+0000");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"user\":\"\\u0000\"}", OAI_CHAT, "user",
            "U+0000");
    {
        static const char raw_nul[] = "{\"prompt\":\"a\0b\"}"; /* a raw NUL byte in the string */
        CHECK(!oai_request_parse(raw_nul, sizeof raw_nul - 1, OAI_COMPLETION, NULL, &r, &err));
        if (err.http_status == 400) CHECK(!strcmp(err.param, "prompt") || strstr(err.message, "JSON"));
        /* an escaped backslash then "u0000" is text, not U+0000 */
        CHECK(parse("{\"prompt\":\"a\\\\u0000\"}", OAI_COMPLETION, &r, &err));
        CHECK(!strcmp(r.prompts[0].text, "a\\u0000"));
        oai_request_free(&r);
    }
    /* seeds are read from the body's text, exactly: a double would make 2^53 + 1 into 2^53 */
    static const struct {
        const char *text;
        uint64_t seed;
    } seeds[] = {
        {"9007199254740993", 9007199254740993ull},
        {"9007199254740992", 9007199254740992ull},
        {"9223372036854775807", 9223372036854775807ull},
        {"-9223372036854775808", (uint64_t)INT64_MIN},
        {"-1", UINT64_MAX},
        {"0", 0},
        {"1e3", 1000},
        {"5.0", 5},
        {"9007199254740991.0", 9007199254740991ull},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char body[96];
        snprintf(body, sizeof body, "{\"prompt\":\"x\", \"seed\" : %s }", seeds[i].text);
        CHECK(parse(body, OAI_COMPLETION, &r, &err));
        CHECK(r.seed_given && r.sampling.seed == seeds[i].seed);
        if (r.sampling.seed != seeds[i].seed)
            fprintf(stderr, "  seed %s read as %llu\n", seeds[i].text,
                    (unsigned long long)r.sampling.seed);
        oai_request_free(&r);
    }
    /* 2^63 passes d <= (double)INT64_MAX (which rounds up to 2^63) but is no int64_t */
    refused("{\"prompt\":\"x\",\"seed\":9223372036854775808}", OAI_COMPLETION, "seed", "must be in");
    refused("{\"prompt\":\"x\",\"seed\":-9223372036854775809}", OAI_COMPLETION, "seed",
            "must be in");
    refused("{\"prompt\":\"x\",\"seed\":123456789012345678901234567890123}", OAI_COMPLETION, "seed",
            "must be in");
    /* not written as an integer: exact only within (-2^53, 2^53) */
    refused("{\"prompt\":\"x\",\"seed\":9007199254740993.0}", OAI_COMPLETION, "seed", "must be in");
    refused("{\"prompt\":\"x\",\"seed\":1e16}", OAI_COMPLETION, "seed", "must be in");
    refused("{\"prompt\":\"x\",\"seed\":\"5\"}", OAI_COMPLETION, "seed", "integer");
    refused("{\"prompt\":\"x\",\"max_tokens\":9223372036854775808}", OAI_COMPLETION, "max_tokens",
            "must be in");
    refused("{\"prompt\":\"x\",\"seed\":1e300}", OAI_COMPLETION, "seed", "must be in");
    refused("{\"prompt\":[]}", OAI_COMPLETION, "prompt", "empty");
    refused("{\"prompt\":[\"a\",[]]}", OAI_COMPLETION, "prompt", "'prompt' item 1 is empty");
    refused("{\"prompt\":[[1],[2],[]]}", OAI_COMPLETION, "prompt", "'prompt' item 2 is empty");
    refused("{\"prompt\":[[]]}", OAI_COMPLETION, "prompt", "'prompt' is empty");
    refused("{\"prompt\":[\"a\",5]}", OAI_COMPLETION, "prompt",
            "'prompt' item 1 must be a string or an array of token ids");
    refused("{\"prompt\":[\"a\",[\"b\"]]}", OAI_COMPLETION, "prompt",
            "'prompt' item 1 must be a string or an array of token ids");
    refused("{\"prompt\":[[1],[2,-3]]}", OAI_COMPLETION, "prompt",
            "'prompt' item 1 must hold token ids");
    refused("{\"prompt\":[1,\"b\"]}", OAI_COMPLETION, "prompt", "its item 1 is not one");
    refused("{\"prompt\":[1,2.5]}", OAI_COMPLETION, "prompt", "token ids");
    refused("{\"prompt\":[1,-1]}", OAI_COMPLETION, "prompt", "token ids");
    refused("{\"prompt\":true}", OAI_COMPLETION, "prompt", "string");
    refused("{\"prompt\":\"x\",\"max_tokens\":-5}", OAI_COMPLETION, "max_tokens", "at least 1");
    refused("{\"prompt\":\"x\",\"max_tokens\":\"5\"}", OAI_COMPLETION, "max_tokens", "integer");
    refused("{\"prompt\":\"x\",\"max_tokens\":1e300}", OAI_COMPLETION, "max_tokens", "must be in");
    refused("{\"prompt\":\"x\",\"temperature\":\"hot\"}", OAI_COMPLETION, "temperature", "number");
    refused("{\"prompt\":\"x\",\"temperature\":-0.1}", OAI_COMPLETION, "temperature", "[0, 100]");
    refused("{\"prompt\":\"x\",\"top_p\":0}", OAI_COMPLETION, "top_p", "(0, 1]");
    refused("{\"prompt\":\"x\",\"top_p\":1.5}", OAI_COMPLETION, "top_p", "(0, 1]");
    refused("{\"prompt\":\"x\",\"top_k\":-2}", OAI_COMPLETION, "top_k", "[-1,");
    refused("{\"prompt\":\"x\",\"min_p\":2}", OAI_COMPLETION, "min_p", "[0, 1]");
    refused("{\"prompt\":\"x\",\"repetition_penalty\":0}", OAI_COMPLETION, "repetition_penalty", "greater than 0");
    refused("{\"prompt\":\"x\",\"presence_penalty\":3}", OAI_COMPLETION, "presence_penalty", "[-2, 2]");
    refused("{\"prompt\":\"x\",\"frequency_penalty\":-3}", OAI_COMPLETION, "frequency_penalty", "[-2, 2]");
    refused("{\"prompt\":\"x\",\"seed\":1.5}", OAI_COMPLETION, "seed", "integer");
    refused("{\"prompt\":\"x\",\"n\":17}", OAI_COMPLETION, "n", "[1, 16]");
    refused("{\"prompt\":\"x\",\"stop\":[\"a\",1]}", OAI_COMPLETION, "stop", "strings");
    refused("{\"prompt\":\"x\",\"stop\":\"\"}", OAI_COMPLETION, "stop", "empty");
    refused("{\"prompt\":\"x\",\"stop_token_ids\":5}", OAI_COMPLETION, "stop_token_ids", "array");
    refused("{\"prompt\":\"x\",\"stop_token_ids\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
            OAI_COMPLETION, "stop_token_ids", "at most 16");
    refused("{\"prompt\":\"x\",\"ignore_eos\":1}", OAI_COMPLETION, "ignore_eos", "boolean");
    refused("{\"prompt\":\"x\",\"logprobs\":true}", OAI_COMPLETION, "logprobs", "integer");
    refused("{\"prompt\":\"x\",\"logprobs\":21}", OAI_COMPLETION, "logprobs", "[0, 20]");
    /* echo with logprobs asks for the prompt's logprobs too; without, not */
    CHECK(parse("{\"prompt\":\"x\",\"echo\":true,\"logprobs\":0}", OAI_COMPLETION, &r, &err));
    CHECK(r.echo && r.logprobs && r.sampling.prompt_logprobs);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"echo\":true,\"logprobs\":null}", OAI_COMPLETION, &r, &err));
    CHECK(r.echo && !r.logprobs && !r.sampling.prompt_logprobs);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"logprobs\":1}", OAI_COMPLETION, &r, &err));
    CHECK(!r.sampling.prompt_logprobs && r.prompt_logprobs == -1);
    oai_request_free(&r);
    /* vLLM's prompt_logprobs: the engine records max(it, an echo's top_logprobs)
     * alternatives; 0 in a stream is dropped, more refused */
    CHECK(parse("{\"prompt\":\"x\",\"prompt_logprobs\":0}", OAI_COMPLETION, &r, &err));
    CHECK(r.prompt_logprobs == 0 && r.sampling.prompt_logprobs && !r.sampling.prompt_top_logprobs);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"prompt_logprobs\":2,\"echo\":true,\"logprobs\":5}",
                OAI_COMPLETION, &r, &err));
    CHECK(r.prompt_logprobs == 2 && r.sampling.prompt_logprobs &&
          r.sampling.prompt_top_logprobs == 5);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"prompt_logprobs\":7,"
                "\"logprobs\":true,\"top_logprobs\":3}",
                OAI_CHAT, &r, &err));
    CHECK(r.prompt_logprobs == 7 && r.sampling.prompt_top_logprobs == 7);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"prompt_logprobs\":0,\"stream\":true}", OAI_COMPLETION, &r,
                &err));
    CHECK(r.prompt_logprobs == -1 && !r.sampling.prompt_logprobs);
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"prompt_logprobs\":1,\"stream\":true}", OAI_COMPLETION,
            "prompt_logprobs", "stream");
    refused("{\"prompt\":\"x\",\"prompt_logprobs\":21}", OAI_COMPLETION, "prompt_logprobs",
            "[0, 20]");
    refused("{\"prompt\":\"x\",\"prompt_logprobs\":-1}", OAI_COMPLETION, "prompt_logprobs",
            "[0, 20]");
    refused("{\"prompt\":\"x\",\"prompt_logprobs\":true}", OAI_COMPLETION, "prompt_logprobs",
            "integer");
    refused("{\"prompt\":\"x\",\"min_tokens\":5,\"max_tokens\":4}", OAI_COMPLETION, "min_tokens", "exceed");
    refused("{\"prompt\":\"x\",\"stream_options\":{}}", OAI_COMPLETION, "stream_options", "stream");
    refused("{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":1}}",
            OAI_COMPLETION, "stream_options.include_usage", "boolean");
    refused("{\"prompt\":\"x\",\"model\":5}", OAI_COMPLETION, "model", "string");
    refused("{\"prompt\":\"x\",", OAI_COMPLETION, "", "not valid JSON");
    refused("", OAI_COMPLETION, "", "not valid JSON");
    refused("[]", OAI_COMPLETION, "", "JSON object");
    refused("{\"prompt\":\"\xff\"}", OAI_COMPLETION, "", "UTF-8");
}

/* Fields of OpenAI's API and vLLM's extensions that change the result: each
 * read, or refused with 400 naming it where encore does not do what it asks. */
static void test_request_fields(void)
{
    oai_request r;
    oai_error err;
    /* suffix: refused, as vLLM refuses it; null or "" asks for nothing */
    refused("{\"prompt\":\"x\",\"suffix\":\"y\"}", OAI_COMPLETION, "suffix", "not supported");
    refused("{\"prompt\":\"x\",\"suffix\":5}", OAI_COMPLETION, "suffix", "string");
    CHECK(parse("{\"prompt\":\"x\",\"suffix\":null}", OAI_COMPLETION, &r, &err));
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"suffix\":\"\"}", OAI_COMPLETION, &r, &err));
    oai_request_free(&r);

    /* truncate_prompt_tokens: k >= 1 or -1 (completions and chat); null is none */
    CHECK(parse("{\"prompt\":\"x\",\"truncate_prompt_tokens\":3}", OAI_COMPLETION, &r, &err));
    CHECK(r.truncate_prompt_tokens == 3);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                "\"truncate_prompt_tokens\":-1}",
                OAI_CHAT, &r, &err));
    CHECK(r.truncate_prompt_tokens == -1);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"truncate_prompt_tokens\":null}", OAI_COMPLETION, &r, &err));
    CHECK(r.truncate_prompt_tokens == 0);
    oai_request_free(&r);
    /* max_tokens 0: with echo (completions) the prompt alone; else refused */
    CHECK(parse("{\"prompt\":\"x\",\"echo\":true,\"max_tokens\":0}", OAI_COMPLETION, &r, &err));
    CHECK(r.prompt_only && r.max_tokens == 0);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"echo\":true,\"max_tokens\":1}", OAI_COMPLETION, &r, &err));
    CHECK(!r.prompt_only && r.max_tokens == 1);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"echo\":true}", OAI_COMPLETION, &r, &err));
    CHECK(!r.prompt_only && r.max_tokens == 0);
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"max_tokens\":0}", OAI_COMPLETION, "max_tokens",
            "0 only with 'echo': true");
    refused("{\"prompt\":\"x\",\"echo\":false,\"max_tokens\":0}", OAI_COMPLETION, "max_tokens",
            "at least 1");
    refused("{\"prompt\":\"x\",\"echo\":true,\"max_tokens\":0,\"min_tokens\":1}", OAI_COMPLETION,
            "min_tokens", "exceed");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":0}", OAI_CHAT,
            "max_tokens", "at least 1");
    /* best_of: n when not given; at least n; above n not streamed */
    CHECK(parse("{\"prompt\":\"x\",\"n\":2}", OAI_COMPLETION, &r, &err));
    CHECK(r.best_of == 2);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"n\":2,\"best_of\":5}", OAI_COMPLETION, &r, &err));
    CHECK(r.n == 2 && r.best_of == 5);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"n\":3,\"best_of\":3,\"stream\":true}", OAI_COMPLETION, &r,
                &err));
    CHECK(r.best_of == 3);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"best_of\":null}", OAI_COMPLETION, &r, &err));
    CHECK(r.best_of == 1);
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"n\":3,\"best_of\":2}", OAI_COMPLETION, "best_of", "at least 'n'");
    refused("{\"prompt\":\"x\",\"best_of\":2,\"stream\":true}", OAI_COMPLETION, "best_of",
            "cannot be streamed");
    refused("{\"prompt\":\"x\",\"best_of\":17}", OAI_COMPLETION, "best_of", "[1, 16]");
    refused("{\"prompt\":\"x\",\"best_of\":0}", OAI_COMPLETION, "best_of", "[1, 16]");
    /* fields nothing reads: accepted and named (four at most, cut, bytes outside printable
     * ASCII as '?'); null ones, "user" and the other kind's fields read here are not */
    CHECK(parse("{\"prompt\":\"x\",\"user\":\"u\",\"frobnicate\":1,\"nothing\":null}",
                OAI_COMPLETION, &r, &err));
    CHECK(!strcmp(r.ignored, "'frobnicate'"));
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"top_logprobs\":2,\"tools\":[],\"a\\nb\":1,"
                "\"abcdefghijklmnopqrstuvwxyz0123456789\":2,\"c\":3,\"d\":4,\"e\":5}",
                OAI_COMPLETION, &r, &err));
    CHECK(!strcmp(r.ignored,
                  "'top_logprobs', 'tools', 'a?b', 'abcdefghijklmnopqrstuvwxyz012345...' "
                  "and 3 more"));
    if (strcmp(r.ignored, "'top_logprobs', 'tools', 'a?b', 'abcdefghijklmnopqrstuvwxyz012345...' "
                          "and 3 more"))
        fprintf(stderr, "  ignored: %s\n", r.ignored);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_logprobs\":2,"
                "\"logprobs\":true,\"echo\":true,\"max_completion_tokens\":3,\"tools\":[]}",
                OAI_CHAT, &r, &err));
    CHECK(!strcmp(r.ignored, "'echo'"));
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"temperature\":0,\"guided_choice\":[\"a\"],\"seed\":1}",
                OAI_COMPLETION, &r, &err));
    CHECK(!strcmp(r.ignored, ""));
    oai_request_free(&r);
    /* parallel_tool_calls (chat): true by default */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", OAI_CHAT, &r, &err));
    CHECK(r.parallel_tool_calls == 1);
    oai_request_free(&r);
    CHECK(parse(
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"parallel_tool_calls\":false}",
        OAI_CHAT, &r, &err));
    CHECK(r.parallel_tool_calls == 0 && !r.ignored[0]);
    oai_request_free(&r);
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"parallel_tool_calls\":0}",
            OAI_CHAT, "parallel_tool_calls", "boolean");
    /* bad_words: an array of words, each kept as written (the engine encodes them); null
     * and [] ask for nothing, an empty or blank word or another type is refused; stop
     * strings of whitespace stay valid */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                "\"bad_words\":[\" Paris\",\"a b\"]}",
                OAI_CHAT, &r, &err));
    CHECK(r.sampling.n_bad_words == 2 && !strcmp(r.sampling.bad_words[0], " Paris") &&
          !strcmp(r.sampling.bad_words[1], "a b"));
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"bad_words\":\"no\"}", OAI_COMPLETION, "bad_words", "array");
    refused("{\"prompt\":\"x\",\"bad_words\":[\" \\n\"]}", OAI_COMPLETION, "bad_words",
            "whitespace");
    refused("{\"prompt\":\"x\",\"bad_words\":[\"\"]}", OAI_COMPLETION, "bad_words", "empty");
    CHECK(parse("{\"prompt\":\"x\",\"stop\":[\"\\n\"]}", OAI_COMPLETION, &r, &err));
    CHECK(r.sampling.n_stop == 1 && !strcmp(r.sampling.stop[0], "\n"));
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"bad_words\":[],\"prompt_logprobs\":null}", OAI_COMPLETION, &r,
                &err));
    CHECK(r.sampling.n_bad_words == 0 && r.prompt_logprobs == -1);
    oai_request_free(&r);
    /* allowed_token_ids: a non-empty array of ids (completions and chat); null is none */
    CHECK(parse("{\"prompt\":\"x\",\"allowed_token_ids\":[7,3,151935]}", OAI_COMPLETION, &r, &err));
    CHECK(r.sampling.n_allowed_token_ids == 3 && r.sampling.allowed_token_ids == r.allowed_ids &&
          r.allowed_ids[0] == 7 && r.allowed_ids[2] == 151935);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                "\"allowed_token_ids\":[1]}",
                OAI_CHAT, &r, &err));
    CHECK(r.sampling.n_allowed_token_ids == 1);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"allowed_token_ids\":null}", OAI_COMPLETION, &r, &err));
    CHECK(r.sampling.n_allowed_token_ids == 0 && !r.sampling.allowed_token_ids);
    oai_request_free(&r);
    static const char *const bad_allowed[][2] = {{"[]", "empty"},
                                                 {"5", "array"},
                                                 {"[1,-2]", "its item 1 is not one"},
                                                 {"[1.5]", "token ids"}};
    for (size_t i = 0; i < sizeof bad_allowed / sizeof bad_allowed[0]; i++) {
        char body[96];
        snprintf(body, sizeof body, "{\"prompt\":\"x\",\"allowed_token_ids\":%s}",
                 bad_allowed[i][0]);
        refused(body, OAI_COMPLETION, "allowed_token_ids", bad_allowed[i][1]);
    }
    /* return_tokens_as_token_ids: a boolean, completions and chat */
    CHECK(
        parse("{\"prompt\":\"x\",\"return_tokens_as_token_ids\":true}", OAI_COMPLETION, &r, &err));
    CHECK(r.tokens_as_ids);
    oai_request_free(&r);
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                "\"return_tokens_as_token_ids\":true}",
                OAI_CHAT, &r, &err));
    CHECK(r.tokens_as_ids);
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"return_tokens_as_token_ids\":1}", OAI_COMPLETION,
            "return_tokens_as_token_ids", "boolean");
    /* stream_options.continuous_usage_stats: only with include_usage, which is true when
     * stream_options leaves it out, as in vLLM */
    CHECK(parse("{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":true,"
                "\"continuous_usage_stats\":true}}",
                OAI_COMPLETION, &r, &err));
    CHECK(r.include_usage && r.continuous_usage);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{"
                "\"continuous_usage_stats\":true}}",
                OAI_COMPLETION, &r, &err));
    CHECK(r.include_usage && r.continuous_usage);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"include_usage\":false,"
                "\"continuous_usage_stats\":true}}",
                OAI_COMPLETION, &r, &err));
    CHECK(!r.include_usage && !r.continuous_usage);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"stream\":true}", OAI_COMPLETION, &r, &err));
    CHECK(!r.include_usage);
    oai_request_free(&r);
    /* include_reasoning (vLLM's, chat), and a chat_template in the request: refused */
    CHECK(
        parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"include_reasoning\":false}",
              OAI_CHAT, &r, &err));
    CHECK(!r.include_reasoning && !r.ignored[0]);
    oai_request_free(&r);
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template\":\"{{ x }}\"}",
            OAI_CHAT, "chat_template", "not supported");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template\":\"{{ x }}\"}",
            OAI_TOKENIZE, "chat_template", "not supported");
    /* an object-form schema keeps its numbers as written (cJSON's print would make
     * 5.000000000000001 a 5), whatever field gives it */
    static const char *const exact[] = {
        "{\"prompt\":\"x\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
        "{\"name\":\"n\",\"schema\":{\"type\": \"integer\", \"minimum\": 5.000000000000001}}}}",
        "{\"prompt\":\"x\",\"structured_outputs\":{\"json\":{\"type\":\"integer\",\"minimum\":"
        "5.000000000000001}}}",
        "{\"prompt\":\"x\",\"guided_json\":{\"type\":\"integer\",\"minimum\":5.000000000000001}}",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        CHECK(parse(exact[i], OAI_COMPLETION, &r, &err));
        CHECK(r.structured.json_schema &&
              !strcmp(r.structured.json_schema,
                      "{\"type\":\"integer\",\"minimum\":5.000000000000001}"));
        oai_request_free(&r);
    }
    /* completions' default max_tokens (16) bounds min_tokens as a given one does (vLLM) */
    refused("{\"prompt\":\"x\",\"min_tokens\":17}", OAI_COMPLETION, "min_tokens",
            "(16, the default)");
    CHECK(parse("{\"prompt\":\"x\",\"min_tokens\":16}", OAI_COMPLETION, &r, &err));
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":\"x\",\"min_tokens\":17,\"max_tokens\":null}", OAI_COMPLETION, &r,
                &err));
    oai_request_free(&r);
    refused("{\"prompt\":\"x\",\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":1}}",
            OAI_COMPLETION, "stream_options.continuous_usage_stats", "boolean");
    refused("{\"prompt\":\"x\",\"truncate_prompt_tokens\":0}", OAI_COMPLETION,
            "truncate_prompt_tokens", "at least 1");
    refused("{\"prompt\":\"x\",\"truncate_prompt_tokens\":-2}", OAI_COMPLETION,
            "truncate_prompt_tokens", "must be in [-1,");
    refused("{\"prompt\":\"x\",\"truncate_prompt_tokens\":2.5}", OAI_COMPLETION,
            "truncate_prompt_tokens", "integer");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
            "\"truncate_prompt_tokens\":\"3\"}",
            OAI_CHAT, "truncate_prompt_tokens", "integer");
}

/* The body is one JSON object, nothing after it but whitespace, no key twice in any object. */
static void test_json_body(void)
{
    oai_request r;
    oai_error err;
    refused("{\"prompt\":\"Hi\",\"max_tokens\":2} garbage", OAI_COMPLETION, "", "more follows");
    refused("{\"prompt\":\"Hi\"}{}", OAI_COMPLETION, "", "at byte 15");
    refused("{\"prompt\":\"Hi\"}\n,", OAI_COMPLETION, "", "more follows");
    CHECK(parse(" {\"prompt\":\"Hi\"} \r\n\t ", OAI_COMPLETION, &r, &err));
    oai_request_free(&r);
    /* the body is length-delimited: what follows len is not read */
    CHECK(oai_request_parse("{\"prompt\":\"Hi\"}xyz", 15, OAI_COMPLETION, NULL, &r, &err));
    oai_request_free(&r);
    static const char nul_after[] = "{\"prompt\":\"Hi\"}\0";
    CHECK(!oai_request_parse(nul_after, sizeof nul_after - 1, OAI_COMPLETION, NULL, &r, &err));
    refused("{\"prompt\":\"Hi\",\"prompt\":5}", OAI_COMPLETION, "prompt", "given twice");
    refused("{\"prompt\":\"Hi\",\"stream\":true,\"stream_options\":{\"include_usage\":true,"
            "\"include_usage\":false}}",
            OAI_COMPLETION, "stream_options.include_usage", "given twice");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\","
            "\"content\":\"b\",\"role\":\"system\"}]}",
            OAI_CHAT, "messages[1].role", "given twice");
    refused("{\"prompt\":\"x\",\"logit_bias\":{\"7\":1,\"9\":2,\"7\":-3}}", OAI_COMPLETION,
            "logit_bias.7", "given twice");
    /* the same key in different objects, or written once per object, is fine */
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\","
                "\"content\":\"b\"}],\"role\":1}",
                OAI_CHAT, &r, &err));
    oai_request_free(&r);
    /* a wide object: every key once, then one key twice */
    size_t n = 20000, cap = n * 16 + 64, at = 0;
    char *wide = malloc(cap);
    CHECK(wide != NULL);
    if (!wide) return;
    at += (size_t)snprintf(wide + at, cap - at, "{\"prompt\":\"x\"");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(wide + at, cap - at, ",\"k%zu\":%zu", i, i);
    snprintf(wide + at, cap - at, "}");
    CHECK(parse(wide, OAI_COMPLETION, &r, &err));
    oai_request_free(&r);
    snprintf(wide + at, cap - at, ",\"k%zu\":0}", n / 2);
    refused(wide, OAI_COMPLETION, "k10000", "given twice");
    free(wide);
}

static void test_chat_request(void)
{
    oai_request r;
    oai_error err;
    CHECK(parse("{\"messages\":[{\"role\":\"developer\",\"content\":\"Be nice.\"},"
                "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                "{\"type\":\"text\",\"text\":\"b\"}]},"
                "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hm\"},"
                "{\"role\":\"tool\",\"content\":\"42\"}],"
                "\"max_completion_tokens\":9,\"max_tokens\":100,\"logprobs\":true,\"top_logprobs\":2,"
                "\"chat_template_kwargs\":{\"enable_thinking\":false}}",
                OAI_CHAT, &r, &err));
    CHECK(r.n_messages == 4);
    CHECK(!strcmp(r.messages[0].role, "system") && !strcmp(r.messages[0].content, "Be nice."));
    CHECK(!strcmp(r.messages[1].role, "user") && !strcmp(r.messages[1].content, "a\nb"));
    CHECK(!strcmp(r.messages[2].role, "assistant") && !strcmp(r.messages[2].content, "") &&
          !strcmp(r.messages[2].reasoning_content, "hm"));
    CHECK(!strcmp(r.messages[3].role, "tool") && !r.messages[3].reasoning_content);
    CHECK(r.max_tokens == 9 && !r.enable_thinking && r.logprobs && r.top_logprobs == 2);
    oai_request_free(&r);

    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", OAI_CHAT, &r, &err));
    CHECK(r.enable_thinking == 1 && !r.logprobs && r.top_logprobs == 0);
    oai_request_free(&r);

    refused("{}", OAI_CHAT, "messages", "required");
    refused("{\"messages\":{}}", OAI_CHAT, "messages", "array");
    refused("{\"messages\":[]}", OAI_CHAT, "messages", "empty");
    refused("{\"messages\":[3]}", OAI_CHAT, "messages[0]", "object");
    refused("{\"messages\":[{\"content\":\"x\"}]}", OAI_CHAT, "messages[0].role", "string");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"robot\",\"content\":\"x\"}]}",
            OAI_CHAT, "messages[1].role", "robot");
    refused("{\"messages\":[{\"role\":\"user\"}]}", OAI_CHAT, "messages[0].content", "required");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":5}]}", OAI_CHAT, "messages[0].content", "string");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", OAI_CHAT,
            "messages[0].content", "text");
    refused("{\"messages\":[{\"role\":\"assistant\",\"content\":\"x\",\"reasoning_content\":1}]}",
            OAI_CHAT, "messages[0].reasoning_content", "string");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":2}", OAI_CHAT,
            "logprobs", "boolean");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":1}", OAI_CHAT,
            "top_logprobs", "logprobs");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_completion_tokens\":0}",
            OAI_CHAT, "max_completion_tokens", "at least 1");
    refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template_kwargs\":[]}",
            OAI_CHAT, "chat_template_kwargs", "object");

    CHECK(parse("{\"tokens\":[1,2]}", OAI_DETOKENIZE, &r, &err) && r.n_prompts == 1 &&
          r.prompts[0].n_ids == 2);
    oai_request_free(&r);
    CHECK(parse("{\"prompt\":[\"one\"]}", OAI_TOKENIZE, &r, &err) && r.n_prompts == 1 &&
          !strcmp(r.prompts[0].text, "one"));
    oai_request_free(&r);
    refused("{\"prompt\":[\"a\",\"b\"]}", OAI_TOKENIZE, "prompt", "got a batch of 2");
    CHECK(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                "\"chat_template_kwargs\":{\"enable_thinking\":false}}",
                OAI_TOKENIZE, &r, &err) &&
          r.n_messages == 1 && !r.enable_thinking);
    oai_request_free(&r);
    refused("{\"tokens\":\"1 2\"}", OAI_DETOKENIZE, "tokens", "array");
    refused("{}", OAI_DETOKENIZE, "tokens", "required");
}

static void test_utf8(void)
{
    CHECK(json_utf8_valid("", 0));
    CHECK(json_utf8_valid("a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80", 10));
    CHECK(!json_utf8_valid("\xc3", 1));             /* truncated */
    CHECK(!json_utf8_valid("\xc0\xaf", 2));         /* overlong */
    CHECK(!json_utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
    CHECK(!json_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
    CHECK(!json_utf8_valid("\x80", 1));
    char out[64];
    size_t n = oai_utf8_sanitize("a\xff" "b\xe4\xb8", 5, out, sizeof out);
    CHECK(n == 11 && !strcmp(out, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD"));
    n = oai_utf8_sanitize("\xe4\xb8\xad", 3, out, sizeof out);
    CHECK(n == 3 && !strcmp(out, "\xe4\xb8\xad"));
}

/* --- responses ---------------------------------------------------------------------- */

static size_t token_text(void *user, int32_t id, char *buf, size_t cap)
{
    (void)user;
    /* ids 98, 99: half a character, to see it sanitized and kept in "bytes" */
    if (id == 98 || id == 99) {
        buf[0] = (char)(id == 99 ? 0xe4 : 0xe5);
        return 1;
    }
    if (id == 100) return (size_t)snprintf(buf, cap, "\xec\x9c\x8c"); /* U+C70C: 3 bytes */
    return (size_t)snprintf(buf, cap, "t%d", id);
}

static cJSON *parsed(char *s)
{
    CHECK(s != NULL);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    CHECK(j != NULL);
    free(s);
    return j;
}

static const char *str(const cJSON *o, const char *path)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_responses(void)
{
    oai_head h = {.kind = OAI_COMPLETION, .id = "cmpl-1", .created = 1700000000, .model = "tiny"};
    int32_t ids[2] = {5, 99};
    float lps[2] = {-0.5f, -1.25f};
    encore_logprob top[4] = {{5, -0.5f}, {6, -2.0f}, {99, -1.25f}, {7, -1.5f}};
    oai_logprobs lp = {.ids = ids, .logprobs = lps, .top = top, .n = 2, .n_top = 2,
                       .text_offset = 3, .token_text = token_text};
    oai_choice c[2] = {{.text = "hello", .finish_reason = "length", .lp = &lp},
                       {.text = "bye", .finish_reason = "stop", .stop_reason = "END"}};
    oai_usage u = {.prompt_tokens = 4, .completion_tokens = 6, .cached_tokens = 2};

    cJSON *o = parsed(oai_response_body(&h, c, 2, &u));
    CHECK(!strcmp(str(o, "id"), "cmpl-1") && !strcmp(str(o, "object"), "text_completion"));
    CHECK(num(o, "created") == 1700000000 && !strcmp(str(o, "model"), "tiny"));
    const cJSON *ch = cJSON_GetObjectItem(o, "choices");
    CHECK(cJSON_GetArraySize(ch) == 2);
    const cJSON *c0 = cJSON_GetArrayItem(ch, 0), *c1 = cJSON_GetArrayItem(ch, 1);
    CHECK(num(c0, "index") == 0 && num(c1, "index") == 1);
    CHECK(!strcmp(str(c0, "text"), "hello") && !strcmp(str(c0, "finish_reason"), "length"));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(c0, "stop_reason")) && !strcmp(str(c1, "stop_reason"), "END"));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(c1, "logprobs")));
    const cJSON *l = cJSON_GetObjectItem(c0, "logprobs");
    CHECK(!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tokens"), 0)->valuestring, "t5"));
    CHECK(!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tokens"), 1)->valuestring, "\xEF\xBF\xBD"));
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "token_logprobs"), 1)->valuedouble == -1.25);
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "text_offset"), 0)->valuedouble == 3);
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "text_offset"), 1)->valuedouble == 5);
    const cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "top_logprobs"), 1);
    CHECK(num(t1, "t7") == -1.5 && num(t1, "\xEF\xBF\xBD") == -1.25);
    const cJSON *usage = cJSON_GetObjectItem(o, "usage");
    CHECK(num(usage, "prompt_tokens") == 4 && num(usage, "completion_tokens") == 6 &&
          num(usage, "total_tokens") == 10);
    CHECK(num(cJSON_GetObjectItem(usage, "prompt_tokens_details"), "cached_tokens") == 2);
    cJSON_Delete(o);

    /* the chosen token first, then the alternatives; texts that decode alike (two half
     * characters, both U+FFFD, or the chosen token among the alternatives): one key, its first
     * entry's logprob; logprobs 0: the chosen token alone */
    encore_logprob alike[6] = {{99, -1.0f}, {98, -1.5f},  {7, -2.0f},
                               {5, -0.5f},  {98, -0.75f}, {99, -0.8f}};
    oai_logprobs lp3 = {
        .ids = ids, .logprobs = lps, .top = alike, .n = 2, .n_top = 3, .token_text = token_text};
    oai_choice c3 = {.text = "x", .finish_reason = "length", .lp = &lp3};
    char *body = oai_response_body(&h, &c3, 1, &u);
    const char *tops = body ? strstr(body, "\"top_logprobs\"") : NULL;
    CHECK(tops && !strstr(strstr(tops, "\xEF\xBF\xBD\":") + 1, "\xEF\xBF\xBD\":-1.5") &&
          strstr(tops, "{\"t5\":-0.5,\"\xEF\xBF\xBD\":-1,\"t7\":-2}") &&
          strstr(tops, "{\"\xEF\xBF\xBD\":-1.25,\"t5\":-0.5}"));
    free(body);
    lp3.n_top = 0;
    o = parsed(oai_response_body(&h, &c3, 1, &u));
    l = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "logprobs");
    t1 = cJSON_GetObjectItem(l, "top_logprobs");
    CHECK(cJSON_GetArraySize(cJSON_GetArrayItem(t1, 0)) == 1 &&
          num(cJSON_GetArrayItem(t1, 0), "t5") == -0.5);
    CHECK(cJSON_GetArraySize(cJSON_GetArrayItem(t1, 1)) == 1 &&
          num(cJSON_GetArrayItem(t1, 1), "\xEF\xBF\xBD") == -1.25);
    cJSON_Delete(o);

    /* return_tokens_as_token_ids: "token_id:<id>" for tokens and keys (two ids that decode
     * alike are two keys), text_offset still in the text's characters; chat: the token's name,
     * the chosen token's own bytes, an alternative's the bytes of its name (as vLLM) */
    lp3.n_top = 3;
    lp3.as_ids = 1;
    lp3.text_offset = 3;
    o = parsed(oai_response_body(&h, &c3, 1, &u));
    l = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "logprobs");
    CHECK(!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tokens"), 0)->valuestring,
                  "token_id:5"));
    CHECK(!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tokens"), 1)->valuestring,
                  "token_id:99"));
    t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "top_logprobs"), 0);
    CHECK(cJSON_GetArraySize(t1) == 4 && num(t1, "token_id:5") == -0.5 &&
          num(t1, "token_id:99") == -1.0 && num(t1, "token_id:98") == -1.5 &&
          num(t1, "token_id:7") == -2.0);
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "text_offset"), 1)->valuedouble == 5);
    cJSON_Delete(o);
    h.kind = OAI_CHAT;
    o = parsed(oai_response_body(&h, &c3, 1, &u));
    l = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "logprobs");
    const cJSON *entry = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "content"), 1);
    const cJSON *bytes = cJSON_GetObjectItem(entry, "bytes");
    CHECK(!strcmp(str(entry, "token"), "token_id:99") && cJSON_GetArraySize(bytes) == 1 &&
          cJSON_GetArrayItem(bytes, 0)->valuedouble == 0xe4);
    const cJSON *alt = cJSON_GetArrayItem(cJSON_GetObjectItem(entry, "top_logprobs"), 1);
    bytes = cJSON_GetObjectItem(alt, "bytes");
    CHECK(!strcmp(str(alt, "token"), "token_id:98") && cJSON_GetArraySize(bytes) == 11 &&
          cJSON_GetArrayItem(bytes, 0)->valuedouble == 't' &&
          cJSON_GetArrayItem(bytes, 10)->valuedouble == '8');
    cJSON_Delete(o);
    h.kind = OAI_COMPLETION;

    /* text_offset counts characters (Python's len), not bytes: U+C70C is one, and so is the
     * U+FFFD that stands for half a character */
    int32_t wide[4] = {100, 5, 99, 5};
    float wide_lps[4] = {-1, -1, -1, -1};
    oai_logprobs wlp = {.ids = wide, .logprobs = wide_lps, .n = 4, .token_text = token_text};
    oai_choice wc = {.text = "x", .finish_reason = "length", .lp = &wlp};
    o = parsed(oai_response_body(&h, &wc, 1, &u));
    const cJSON *offsets = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "logprobs"),
        "text_offset");
    static const double want_offsets[4] = {0, 1, 3, 4};
    CHECK(cJSON_GetArraySize(offsets) == 4);
    for (int i = 0; i < 4 && i < cJSON_GetArraySize(offsets); i++)
        CHECK(cJSON_GetArrayItem(offsets, i)->valuedouble == want_offsets[i]);
    CHECK(oai_logprobs_chars(&wlp) == 6);
    cJSON_Delete(o);

    /* a stop id that ended a choice is its stop_reason, as a number (vLLM) */
    int32_t stop_id = 0; /* id 0 is an id like any other */
    oai_choice by_id = {.text = "x", .finish_reason = "stop", .stop_token_id = &stop_id};
    o = parsed(oai_response_body(&h, &by_id, 1, &u));
    const cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(s0, "stop_reason")) && num(s0, "stop_reason") == 0);
    cJSON_Delete(o);

    /* chat: message, reasoning_content only when given, logprobs content with bytes */
    h = (oai_head){.kind = OAI_CHAT, .id = "chatcmpl-1", .created = 1, .model = "tiny"};
    c[0] = (oai_choice){.text = "4", .reasoning = "2+2", .finish_reason = "stop", .lp = &lp};
    c[1] = (oai_choice){.text = "5", .finish_reason = "length"};
    o = parsed(oai_response_body(&h, c, 2, &u));
    CHECK(!strcmp(str(o, "object"), "chat.completion"));
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 1);
    const cJSON *m = cJSON_GetObjectItem(c0, "message");
    CHECK(!strcmp(str(m, "role"), "assistant") && !strcmp(str(m, "content"), "4") &&
          !strcmp(str(m, "reasoning_content"), "2+2"));
    CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(c1, "message"), "reasoning_content"));
    const cJSON *lc = cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "logprobs"), "content");
    CHECK(cJSON_GetArraySize(lc) == 2);
    const cJSON *e1 = cJSON_GetArrayItem(lc, 1);
    CHECK(!strcmp(str(e1, "token"), "\xEF\xBF\xBD") && num(e1, "logprob") == -1.25);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(e1, "bytes")) == 1 &&
          cJSON_GetArrayItem(cJSON_GetObjectItem(e1, "bytes"), 0)->valuedouble == 0xe4);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(e1, "top_logprobs")) == 2);
    CHECK(!strcmp(str(cJSON_GetArrayItem(cJSON_GetObjectItem(e1, "top_logprobs"), 1), "token"), "t7"));
    cJSON_Delete(o);

    /* chunks: role first, content/reasoning deltas, finish with an empty delta */
    oai_choice role = {.text = "", .role = 1};
    o = parsed(oai_response_chunk(&h, 3, &role));
    CHECK(!strcmp(str(o, "object"), "chat.completion.chunk"));
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    CHECK(num(c0, "index") == 3 && cJSON_IsNull(cJSON_GetObjectItem(c0, "finish_reason")));
    CHECK(!strcmp(str(cJSON_GetObjectItem(c0, "delta"), "role"), "assistant"));
    CHECK(!cJSON_GetObjectItem(c0, "stop_reason"));
    cJSON_Delete(o);
    oai_choice think = {.reasoning = "hmm"};
    o = parsed(oai_response_chunk(&h, 0, &think));
    const cJSON *d = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "delta");
    CHECK(!strcmp(str(d, "reasoning_content"), "hmm") && !cJSON_GetObjectItem(d, "content") &&
          !cJSON_GetObjectItem(d, "role"));
    cJSON_Delete(o);
    oai_choice fin = {.finish_reason = "stop"};
    o = parsed(oai_response_chunk(&h, 0, &fin));
    c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    CHECK(cJSON_GetObjectItem(c0, "delta")->child == NULL && !strcmp(str(c0, "finish_reason"), "stop"));
    CHECK(!cJSON_GetObjectItem(o, "usage")); /* without include_usage: no "usage" */
    cJSON_Delete(o);
    o = parsed(oai_response_usage_chunk(&h, &u));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "choices")) == 0 &&
          num(cJSON_GetObjectItem(o, "usage"), "total_tokens") == 10);
    cJSON_Delete(o);
    /* with include_usage, every chunk before the usage chunk has "usage": null, as OpenAI's */
    h.usage_null = 1;
    o = parsed(oai_response_chunk(&h, 0, &fin));
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "usage")));
    cJSON_Delete(o);
    /* continuous_usage_stats: the choice's usage so far in its place */
    oai_usage so_far = {.prompt_tokens = 4, .completion_tokens = 3};
    fin.usage = &so_far;
    o = parsed(oai_response_chunk(&h, 0, &fin));
    const cJSON *cu = cJSON_GetObjectItem(o, "usage");
    CHECK(num(cu, "prompt_tokens") == 4 && num(cu, "completion_tokens") == 3 &&
          num(cu, "total_tokens") == 7);
    cJSON_Delete(o);
    oai_tool_call call = {0, "call_1", "f", "{}"};
    o = parsed(oai_response_tool_call_chunk(&h, 0, &call, 1, &so_far));
    CHECK(num(cJSON_GetObjectItem(o, "usage"), "total_tokens") == 7);
    cJSON_Delete(o);
    fin.usage = NULL;
    o = parsed(oai_response_usage_chunk(&h, &u));
    CHECK(num(cJSON_GetObjectItem(o, "usage"), "total_tokens") == 10);
    cJSON_Delete(o);

    /* the error object, and the model list */
    oai_error err;
    oai_error_set(&err, 400, "max_tokens", "'max_tokens' must be at least 1, got %d", -2);
    o = parsed(oai_response_error(&err));
    const cJSON *e = cJSON_GetObjectItem(o, "error");
    CHECK(!strcmp(str(e, "message"), "'max_tokens' must be at least 1, got -2"));
    CHECK(!strcmp(str(e, "type"), "invalid_request_error") && !strcmp(str(e, "param"), "max_tokens"));
    CHECK(num(e, "code") == 400);
    cJSON_Delete(o);
    oai_error_set(&err, 503, NULL, "busy");
    o = parsed(oai_response_error(&err));
    e = cJSON_GetObjectItem(o, "error");
    CHECK(!strcmp(str(e, "type"), "server_error") && cJSON_IsNull(cJSON_GetObjectItem(e, "param")));
    cJSON_Delete(o);
    o = parsed(oai_response_models("tiny", 5, 4096));
    const cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "data"), 0);
    CHECK(!strcmp(str(o, "object"), "list") && !strcmp(str(m0, "id"), "tiny") &&
          num(m0, "max_model_len") == 4096);
    cJSON_Delete(o);
}

/* --- the <think> splitter ------------------------------------------------------------- */

/* Feed `text` in two pieces split at every position (and byte by byte), and
 * check the reasoning and content that come out. */
static void split_case_in(int in_think, const char *text, const char *want_reasoning,
                          const char *want_content)
{
    size_t n = strlen(text);
    for (size_t cut = 0; cut <= n + 1; cut++) {
        reasoning_split rs;
        reasoning_init(&rs, in_think);
        char *r = NULL, *c = NULL;
        size_t nr = 0, nc = 0;
        if (cut <= n) {
            CHECK(reasoning_put(&rs, text, cut, 0, &r, &nr, &c, &nc));
            CHECK(reasoning_put(&rs, text + cut, n - cut, 1, &r, &nr, &c, &nc));
        } else { /* byte by byte */
            for (size_t i = 0; i < n; i++) CHECK(reasoning_put(&rs, text + i, 1, 0, &r, &nr, &c, &nc));
            CHECK(reasoning_put(&rs, "", 0, 1, &r, &nr, &c, &nc));
        }
        int ok_r = want_reasoning ? r && !strcmp(r, want_reasoning) && nr == strlen(r) : r == NULL;
        int ok_c = c ? !strcmp(c, want_content) && nc == strlen(c) : !want_content[0];
        CHECK(ok_r && ok_c);
        if (!ok_r || !ok_c)
            fprintf(stderr, "  split %s at %zu: reasoning %s content %s\n", text, cut,
                    r ? r : "(null)", c ? c : "(null)");
        free(r);
        free(c);
    }
}

static void split_case(const char *text, const char *want_reasoning, const char *want_content)
{
    split_case_in(0, text, want_reasoning, want_content);
}

static void test_reasoning(void)
{
    /* a prompt that opened the think block (Qwen3 Thinking-2507): reasoning from the start */
    split_case_in(1, "Let me see.\n</think>\n\nIt is 4.", "Let me see.\n", "\n\nIt is 4.");
    split_case_in(1, "</think>a</think>", "", "a</think>");
    split_case_in(1, "no close", "no close", "");
    split_case_in(1, "<think>x</think>y", "<think>x", "y"); /* an opening tag is text there */
    split_case("<think>\nLet me see.\n</think>\n\nThe answer is 4.", "\nLet me see.\n",
               "\n\nThe answer is 4.");
    split_case("The answer is 4.", NULL, "The answer is 4.");
    split_case("<think></think>", "", "");
    split_case("<think>still thinking", "still thinking", "");          /* cut off by length */
    split_case("<thinking>", NULL, "<thinking>");                        /* not the tag */
    split_case("<thi", NULL, "<thi");                                    /* ends inside a maybe-tag */
    split_case("<think>a</thinx>b</think>c<think>d", "a</thinx>b", "c<think>d");
    split_case("<think>a</thi", "a</thi", "");                           /* a partial close is reasoning */
    split_case("x<think>y</think>", NULL, "x<think>y</think>");          /* only at the start */

    /* a NUL byte before the close tag (the splitter takes lengths, not C strings) */
    static const char nul[] = "<think>a\0b</think>c";
    reasoning_split rs;
    reasoning_init(&rs, 0);
    char *r = NULL, *c = NULL;
    size_t nr = 0, nc = 0;
    CHECK(reasoning_put(&rs, nul, sizeof nul - 1, 1, &r, &nr, &c, &nc));
    CHECK(r && nr == 3 && !memcmp(r, "a\0b", 3) && c && nc == 1 && !strcmp(c, "c"));
    free(r);
    free(c);

    /* out of memory right after "</think>": 0, and nothing held past the 16 bytes */
    struct {
        reasoning_split rs;
        char canary[64];
    } guarded;
    reasoning_init(&guarded.rs, 0);
    memset(guarded.canary, 0x5a, sizeof guarded.canary);
    static const char long_tail[] = "<think>x</think>then a content part much longer than sixteen bytes, "
                                    "long enough to run past the held-back buffer";
    r = c = NULL;
    nr = nc = 0;
    realloc_fail_in = 0;
    CHECK(!reasoning_put(&guarded.rs, long_tail, sizeof long_tail - 1, 0, &r, &nr, &c, &nc));
    realloc_fail_in = -1;
    CHECK(guarded.rs.n_held <= sizeof guarded.rs.held);
    int intact = 1;
    for (size_t i = 0; i < sizeof guarded.canary; i++) intact &= guarded.canary[i] == 0x5a;
    CHECK(intact);
    free(r);
    free(c);
}

/* --- metrics -------------------------------------------------------------------------- */

static void test_metrics(void)
{
    metrics m;
    metrics_init(&m);
    metrics_observe_ttft(&m, 0.003);
    metrics_observe_ttft(&m, 5000);
    metrics_observe_itl(&m, 0.08, 4); /* 4 tokens, 0.02 s apart */
    metrics_observe_finish(&m, "stop", 1.0);
    metrics_observe_finish(&m, "abort", 1.0);
    metrics_observe_finish(&m, "error", 1.0);
    metrics_observe_finish(&m, "error", 1.0);
    metrics_count_error(&m);
    encore_stats st = {.n_running = 2, .n_waiting = 3, .kv_blocks_total = 100, .kv_blocks_used = 25,
                       .prefix_queries_tokens = 200, .prefix_hit_tokens = 50, .prompt_tokens = 7,
                       .output_tokens = 9, .n_eager_steps = 4, .n_replays = 11, .n_captures = 2,
                       .n_multi_round_trips = 5, .n_step_failures = 6};
    char *t = metrics_render(&m, &st, "ti\"ny");
    CHECK(t != NULL);
    if (!t) return;
    const char *want[] = {
        "# TYPE encore_num_requests_running gauge\n",
        "encore_num_requests_running{model_name=\"ti\\\"ny\"} 2\n",
        "encore_num_requests_waiting{model_name=\"ti\\\"ny\"} 3\n",
        "encore_kv_cache_usage_perc{model_name=\"ti\\\"ny\"} 0.25\n",
        "encore_prefix_cache_hit_rate{model_name=\"ti\\\"ny\"} 0.25\n",
        "encore_prompt_tokens_total{model_name=\"ti\\\"ny\"} 7\n",
        "encore_generation_tokens_total{model_name=\"ti\\\"ny\"} 9\n",
        "encore_engine_eager_steps_total{model_name=\"ti\\\"ny\"} 4\n",
        "encore_engine_captured_steps_total{model_name=\"ti\\\"ny\"} 16\n",
        "encore_engine_multi_step_replays_total{model_name=\"ti\\\"ny\"} 5\n",
        "# TYPE encore_time_to_first_token_seconds histogram\n",
        "encore_time_to_first_token_seconds_bucket{model_name=\"ti\\\"ny\",le=\"0.001\"} 0\n",
        "encore_time_to_first_token_seconds_bucket{model_name=\"ti\\\"ny\",le=\"0.005\"} 1\n",
        "encore_time_to_first_token_seconds_bucket{model_name=\"ti\\\"ny\",le=\"2560\"} 1\n",
        "encore_time_to_first_token_seconds_bucket{model_name=\"ti\\\"ny\",le=\"+Inf\"} 2\n",
        "encore_time_to_first_token_seconds_count{model_name=\"ti\\\"ny\"} 2\n",
        "encore_inter_token_latency_seconds_bucket{model_name=\"ti\\\"ny\",le=\"0.01\"} 0\n",
        "encore_inter_token_latency_seconds_bucket{model_name=\"ti\\\"ny\",le=\"0.025\"} 4\n",
        "encore_inter_token_latency_seconds_count{model_name=\"ti\\\"ny\"} 4\n",
        "encore_request_success_total{model_name=\"ti\\\"ny\",finished_reason=\"stop\"} 1\n",
        "encore_request_success_total{model_name=\"ti\\\"ny\",finished_reason=\"abort\"} 1\n",
        "encore_request_success_total{model_name=\"ti\\\"ny\",finished_reason=\"error\"} 2\n",
        "encore_engine_step_failures_total{model_name=\"ti\\\"ny\"} 6\n",
        "encore_http_request_errors_total{model_name=\"ti\\\"ny\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = strstr(t, want[i]) != NULL;
        CHECK(found);
        if (!found) fprintf(stderr, "  /metrics lacks: %s", want[i]);
    }
    free(t);
    /* no engine yet: zero gauges, no division by zero */
    encore_stats zero = {0};
    t = metrics_render(&m, &zero, "m");
    CHECK(t && strstr(t, "encore_kv_cache_usage_perc{model_name=\"m\"} 0\n"));
    free(t);
    metrics_destroy(&m);
}

/* --- header checks ------------------------------------------------------------------ */

static void test_http_guard(void)
{
    CHECK(http_guard_json_type("application/json"));
    CHECK(http_guard_json_type("application/json; charset=utf-8"));
    CHECK(http_guard_json_type(" Application/JSON ;charset=UTF-8"));
    CHECK(!http_guard_json_type(NULL) && !http_guard_json_type(""));
    CHECK(!http_guard_json_type("text/plain") && !http_guard_json_type("application/jsonx"));
    CHECK(!http_guard_json_type("application/x-www-form-urlencoded"));
    CHECK(!http_guard_json_type("multipart/form-data; boundary=x"));

    const char *ok[] = {"localhost", "localhost:8000", "LOCALHOST", "127.0.0.1", "127.0.0.1:1",
                        "[::1]", "[::1]:8000"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) CHECK(http_guard_host(ok[i], NULL));
    const char *bad[] = {"", ":80", "evil.example", "evil.example:80", "localhost.evil.example",
                         "127.0.0.1.evil.example", "localhostx", "[::1", "[::1]x", "[::2]", "::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(!http_guard_host(bad[i], NULL));
        CHECK(!http_guard_host(bad[i], "a.example,b.example"));
        CHECK(http_guard_host(bad[i], "a.example,*"));
    }
    CHECK(http_guard_host(NULL, NULL));
    CHECK(http_guard_host("b.example:443", " a.example , B.Example "));
    CHECK(!http_guard_host("b.example", "a.example,,c.example"));
    CHECK(!http_guard_host("", "a.example,,"));
    CHECK(!http_guard_host("example", "a.example"));

    CHECK(http_guard_bearer("Bearer sesame", "sesame"));
    CHECK(http_guard_bearer("bearer sesame", "sesame") && http_guard_bearer("BEARER sesame", "sesame"));
    CHECK(http_guard_bearer("Bearer   sesame", "sesame"));
    CHECK(!http_guard_bearer("Bearersesame", "sesame") && !http_guard_bearer("bearer Sesame", "sesame"));
    CHECK(!http_guard_bearer(NULL, "sesame") && !http_guard_bearer("Bearer sesam", "sesame"));
    CHECK(!http_guard_bearer("Bearer sesamee", "sesame") && !http_guard_bearer("sesame", "sesame"));
    CHECK(!http_guard_bearer("Basic sesame", "sesame") && !http_guard_bearer("Bearer ", "sesame"));
}

/* 1 when the peer of `fd` shut its socket down (recv sees the end), 0 when
 * it is open with nothing to read. */
static int peer_closed(int fd)
{
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
    return r == 0 ? 1 : r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
}

static void test_http_deadline(void)
{
    int a[2], b[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
    http_deadline *d = http_deadline_create(2.0, 0);
    CHECK(d != NULL);
    http_deadline_conn *ca = http_deadline_add(d, a[0]), *cb = http_deadline_add(d, b[0]);
    CHECK(ca && cb);
    CHECK(http_deadline_add(d, -1) == NULL);
    http_deadline_reading(d, cb, 0); /* b's request is in: no deadline */
    double now = http_deadline_now();
    CHECK(http_deadline_expire(d, now + 1.0) == 0);
    CHECK(peer_closed(a[1]) == 0 && peer_closed(b[1]) == 0);
    CHECK(http_deadline_expire(d, now + 2.5) == 1); /* a, still reading after 2 s */
    CHECK(peer_closed(a[1]) == 1 && peer_closed(b[1]) == 0);
    CHECK(http_deadline_expire(d, now + 9.0) == 0); /* each once; b is not reading */
    http_deadline_reading(d, cb, 1);                /* b waits for its next request: from now */
    double again = http_deadline_now();
    CHECK(http_deadline_expire(d, again + 1.5) == 0);
    CHECK(http_deadline_expire(d, again + 2.5) == 1 && peer_closed(b[1]) == 1);
    http_deadline_remove(d, ca); /* closes its dup, not the socket */
    CHECK(fcntl(a[0], F_GETFD) != -1);
    http_deadline_destroy(d); /* frees cb still in it */
    for (int i = 0; i < 2; i++) close(a[i]), close(b[i]);

    /* the watchdog thread enforces it on its own */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
    d = http_deadline_create(0.2, 1);
    CHECK(d && http_deadline_add(d, a[0]));
    int closed = 0;
    for (int i = 0; i < 200 && !closed; i++) {
        usleep(10000);
        closed = peer_closed(a[1]) == 1;
    }
    CHECK(closed);
    http_deadline_destroy(d);
    close(a[0]);
    close(a[1]);
}

int main(void)
{
    test_completion_request();
    test_request_fields();
    test_json_body();
    test_chat_request();
    test_utf8();
    test_responses();
    test_reasoning();
    test_metrics();
    test_http_guard();
    test_http_deadline();
    if (!check_failures) printf("test_server_unit: all checks passed\n");
    return check_failures != 0;
}

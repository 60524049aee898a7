/* encore_tools.h - the engine's internals that the `encore` program
 * (tools/) uses beyond include/encore.h: the engine itself (stepping it by
 * hand, per-step statistics, the logits callback), the tokenizer and chat
 * template (and the tokenizer of a model path, tokenizer.json or GGUF),
 * writing GGUF files (`encore quantize`), backend names and the CPU kernels'
 * ISA, the Vulkan device list, the thread pool (for `encore bench`'s
 * memory-bandwidth probe), the yes/no words of environment variables, and
 * reading a whole file.
 *
 * NOT part of the API: no stability promise, and not for programs that embed
 * encore, which use include/encore.h alone (examples/stream.c). The encore
 * program includes no other header of src/ (its build gives it src/ on the
 * include path for this header alone; test_tools_includes checks it). */
#ifndef ENC_API_ENCORE_TOOLS_H
#define ENC_API_ENCORE_TOOLS_H

#include "api/model_tokenizer.h"
#include "api/quantize.h"
#include "api/structured.h"
#include "backend/backend.h"
#include "backend/cpu/kernels.h"
#include "base/env_flag.h"
#include "base/json_whole.h"
#include "base/mapfile.h"
#include "base/random_seed.h"
#include "base/status.h"
#include "base/threadpool.h"
#include "engine/engine.h"
#include "model/pooling_config.h"
#include "model/quantize.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#ifdef ENCORE_HAVE_VULKAN
#include "backend/vulkan/vk_backend.h"
#endif

#endif

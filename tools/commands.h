/* commands.h - the subcommands of the `encore` program.
 *
 * Each takes the arguments after its name (argv[0] is the subcommand name),
 * prints its own --help, and returns the process exit status: 0 on success,
 * 1 on a runtime failure, 2 on a bad argument (with a one-line reason). */
#ifndef ENC_TOOLS_COMMANDS_H
#define ENC_TOOLS_COMMANDS_H

int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_serve(int argc, char **argv); /* `encore bench serve` */
int cmd_chat(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_run_batch(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_quantize(int argc, char **argv);

#endif

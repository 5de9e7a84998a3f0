/* SPDX-License-Identifier: GPL-2.0-or-later */
/* main.c - the raidfuse program: the library's stack of member IO, then
 * the command line (front/cmds.c: the commands, their options, help and
 * usage; each command in a cmd_*.c file).
 *
 * What it does NOT do: anything else; nothing in the library calls into
 * it (tools/layers.sh checks).
 */
#include "raidfuse/stack.h"

#include "front/cli.h"

int main(int argc, char **argv)
{
	rf_stack_set(&rf_stack_default);
	return rf_cli_main(argc, argv);
}

/* testdir.h - a scratch directory for a unit test's member files: on
 * /dev/shm when it is writable (fast, no disk), else /tmp. */
#ifndef TESTDIR_H
#define TESTDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Make dir (size bytes) as BASE/rf-<what>-XXXXXX; returns 0 or -1. */
static inline int testdir_make(char *dir, size_t size, const char *what)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(dir, size, "%s/rf-%s-XXXXXX", base, what);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int testdir_remove(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif

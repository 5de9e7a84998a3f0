/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdmap.c - memory-backed member files mapped (see fdmap.h).
 *
 * Guarded code: rf_fdmap_guarded() sets a thread-local jump buffer with
 * sigsetjmp(env, 0) (no signal mask saved: no system call per call) and
 * runs the function.  A page that faults raises SIGBUS in that thread;
 * the handler, installed with SA_NODEFER (so the signal is not left
 * blocked after the jump), finds the thread's buffer and jumps back, and
 * the call returns -EFAULT.  A SIGBUS with no buffer set is not ours: the handler puts the
 * action found at install back and returns, the faulting instruction runs
 * again and the signal takes that action (by default, the process ends
 * with a core, as without this module).
 *
 * Invariant: a struct rf_fdmap with a base owns one mapping of len bytes;
 * it may be moved by value (a device changing slots), never copied.
 */
#include <errno.h>
#include <linux/magic.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>

#include "raidfuse/fdmap.h"
#include "raidfuse/log.h"

/* The smallest page: a load every PAGE bytes touches every page. */
#define PAGE 4096u

static atomic_bool set_up;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;
static struct sigaction bus_was;                /* the action before ours */
static __thread sigjmp_buf *bus_guard;          /* a guarded copy runs */
static __thread bool bus_unblocked;             /* SIGBUS unblocked in this thread */
static atomic_bool map_on;

void rf_fdmap_setup(bool on)
{
	atomic_store(&map_on, on);
	atomic_store(&set_up, true);
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* From the environment, once, unless rf_fdmap_setup() came first. */
static void env_setup(void)
{
	const char *e = getenv("RAIDFUSE_MAP");

	if (atomic_load(&set_up))
		return;
	if (e && strcmp(e, "0") && strcmp(e, "1"))
		rf_warn("RAIDFUSE_MAP=%s: not 0 or 1; members in memory are mapped", e);
	rf_fdmap_setup(!e || strcmp(e, "0"));
}

bool rf_fdmap_on(void)
{
	pthread_once(&env_once, env_setup);
	return atomic_load(&map_on);
}

/* A regular file whose pages are memory. */
bool rf_fdmap_in_memory(int fd)
{
	struct statfs sf;
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fstatfs(fd, &sf))
		return false;
	return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *g = bus_guard;

	(void)si;
	(void)uc;
	if (g) {
		bus_guard = NULL;
		siglongjmp(*g, 1);
	}
	sigaction(sig, &bus_was, NULL);
}

void rf_fdmap_catch_sigbus(void)
{
	struct sigaction sa, was;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &was)) {
		rf_warn("SIGBUS handler: %s: a member shrunk under its mapping ends the daemon", strerror(errno));
		return;
	}
	if (!(was.sa_flags & SA_SIGINFO) || was.sa_sigaction != on_sigbus)
		bus_was = was;
}

static void bus_install(void)
{
	rf_fdmap_catch_sigbus();
}

struct copy_args {
	char *to;
	const struct iovec *p;
	int n;
};

static int copy_pieces(void *arg)
{
	struct copy_args *c = arg;
	char *to = c->to;
	int i;

	for (i = 0; i < c->n; i++) {
		memcpy(to, c->p[i].iov_base, c->p[i].iov_len);
		to += c->p[i].iov_len;
	}
	return 0;
}

#if defined(__x86_64__)
#include <emmintrin.h>

/* Not instrumented by TSan (see fdmap.h): byte loops for the unaligned
 * ends, so nothing calls an intercepted memcpy. */
__attribute__((no_sanitize("thread"))) void rf_fdmap_store(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n && ((uintptr_t)d & 15)) {
		*d++ = *s++;
		n--;
	}
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	for (; n >= 16; n -= 16, d += 16, s += 16)
		_mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
	while (n--)
		*d++ = *s++;
	/* Ordered before whatever ends the write (its completion, the
	 * reply): the stores are visible to every reader of the file. */
	_mm_sfence();
}
#else
void rf_fdmap_store(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}
#endif

static void bus_unblock(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	bus_unblocked = true;
}

int rf_fdmap_guarded(int (*fn)(void *), void *arg)
{
	sigjmp_buf env;
	int ret;

	pthread_once(&bus_once, bus_install);
	/* A fault's SIGBUS that is blocked ends the process whatever the
	 * handler: the daemon's threads start with signals blocked, so this
	 * one lets SIGBUS through, once. */
	if (!bus_unblocked)
		bus_unblock();
	/* fn runs in its own frame: nothing of this one changes between
	 * sigsetjmp() and a jump back. */
	if (sigsetjmp(env, 0)) {
		/* Whoever ran the handler (a sanitizer's wrapper may ignore
		 * SA_NODEFER) may have left SIGBUS blocked. */
		bus_unblock();
		return -EFAULT;
	}
	bus_guard = &env;
	ret = fn(arg);
	bus_guard = NULL;
	return ret;
}

/* One load from every page of the pieces: each page is there (or was
 * faulted in) when this returns.  volatile: the loads are the point. */
static int touch_pieces(void *arg)
{
	const struct copy_args *c = arg;
	int i;

	for (i = 0; i < c->n; i++) {
		const volatile char *at = c->p[i].iov_base, *end = at + c->p[i].iov_len;

		if (at == end)
			continue;
		(void)*at;
		for (at = (const char *)(((uintptr_t)at | (PAGE - 1)) + 1); at < end; at += PAGE)
			(void)*at;
	}
	return 0;
}

int rf_fdmap_probe(const struct iovec *p, int n)
{
	struct copy_args c = { NULL, p, n };

	return rf_fdmap_guarded(touch_pieces, &c);
}

int rf_fdmap_copy(void *dst, const struct iovec *p, int n)
{
	struct copy_args c = { dst, p, n };

	return rf_fdmap_guarded(copy_pieces, &c);
}

int rf_fdmap_open(struct rf_fdmap *m, int fd, uint64_t len, bool writable)
{
	void *p;

	m->base = NULL;
	m->len = 0;
	m->writable = false;
	if (!rf_fdmap_on() || !len || len > (uint64_t)SIZE_MAX || !rf_fdmap_in_memory(fd))
		return -ENOTSUP;
	p = mmap(NULL, (size_t)len, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->base = p;
	m->len = len;
	m->writable = writable;
	return 0;
}

void rf_fdmap_close(struct rf_fdmap *m)
{
	if (m->base)
		munmap((void *)m->base, (size_t)m->len);
	m->base = NULL;
	m->len = 0;
	m->writable = false;
}

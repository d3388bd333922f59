//go:build cgo && !purego && linux

/*
 * lock.c: the file's reader/writer lock in C, for the C core's batches,
 * which take it, update and release it in one crossing. It is the protocol
 * of lock_linux.go word for word (docs/DESIGN.md draws the words), so a cgo
 * process locking here and a pure-Go process locking in Go exclude each
 * other and recover each other's dead holders. Keep in sync with
 * lock_linux.go: same words, same order of atomics, same timeouts, and the
 * same points where a wait past the handle's bound (sk_lock's timeout) gives
 * up: a reader after leaving its slot, a writer before claiming W or, once
 * it claimed W, by releasing it as sk_unlock_write does.
 *
 * Futex contract (futex(2)): FUTEX_WAIT sleeps only while the word still
 * holds the value given, checked atomically with going to sleep, so a wake
 * that follows a change is never lost; it may return spuriously, so every
 * caller looks again in a loop. The private flag is never used: the words
 * are shared between processes, which the kernel keys by file and offset.
 */
#define _GNU_SOURCE /* F_OFD_GETLK, syscall */
#define _FILE_OFFSET_BITS 64 /* token bytes lie at 2^62 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sketch.h"

/* The state word; lock_linux.go's stW etc. */
#define SK_W ((uint32_t)1 << 31)       /* a writer holds the lock or drains readers */
#define SK_WPARKED ((uint32_t)1 << 30) /* a writer sleeps on state */
#define SK_RTURN ((uint32_t)1 << 29)   /* readers' turn: writers hold off briefly */
#define SK_RPARKED ((uint32_t)1 << 28) /* a reader sleeps on state */
#define SK_OWNER ((uint32_t)0xffff)    /* the holder's token id + 1 */

/* Liveness bytes start here, far past any file's data. */
#define SK_TOKEN_BASE ((off_t)1 << 62)

#define SK_NS 1000000000LL
/* How long a waiter sleeps before it asks whether the holder is alive. */
#define SK_PATIENCE (10 * 1000000LL)
/* How long writers hold off after a writer let parked readers in. */
#define SK_READERS_TURN (1 * 1000000LL)

/* The words are plain integers for Go; C reaches them as atomics of the
 * same size and alignment. Every access is sequentially consistent, as
 * sync/atomic's are: the reader's slot add and state load, the writer's W
 * store and slot loads, need it. */
#define A32(p) ((_Atomic uint32_t *)(p))
#define A64(p) ((_Atomic uint64_t *)(p))

static int64_t sk_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SK_NS + ts.tv_nsec;
}

/* sk_futex_wait sleeps while *addr == val, until woken or for at most
 * timeout ns (> 0). It returns true when the timeout expired. Interrupted
 * sleeps resume with the time that is left. */
static bool sk_futex_wait(uint32_t *addr, uint32_t val, int64_t timeout)
{
	int64_t deadline = sk_now() + timeout;
	for (;;) {
		int64_t left = deadline - sk_now();
		if (left <= 0)
			return true;
		struct timespec ts = {.tv_sec = left / SK_NS, .tv_nsec = left % SK_NS};
		if (syscall(SYS_futex, addr, (long)FUTEX_WAIT, (long)val, &ts, NULL, 0L) == 0)
			return false;
		switch (errno) {
		case EINTR:
			continue;
		case ETIMEDOUT:
			return true;
		default: /* EAGAIN: the word was not val */
			return false;
		}
	}
}

/* sk_wait_left returns how many ns of the lock wait's bound are left,
 * starting the bound (in *deadline, 0 until then) at its first call: an
 * uncontended lock never reads the clock (lock_linux.go's waitLeft). */
static int64_t sk_wait_left(const sk_lock *l, int64_t *deadline)
{
	if (*deadline == 0)
		*deadline = sk_now() + l->timeout;
	return *deadline - sk_now();
}

static int64_t sk_min(int64_t a, int64_t b) { return a < b ? a : b; }

static void sk_futex_wake_all(uint32_t *addr)
{
	syscall(SYS_futex, addr, (long)FUTEX_WAKE, (long)INT_MAX, NULL, NULL, 0L);
}

/* Token records (token_linux.go draws them): two words each. The first
 * has CLAIMED, OFD, GEN, PID and PID namespace; the second the holder's
 * start time and the GEN it goes with. A process may write them only if it
 * may write the file. */
#define SK_TOK_CLAIMED ((uint64_t)1)
#define SK_TOK_OFD ((uint64_t)2)
#define SK_TOK_GEN_SHIFT 2
#define SK_TOK_GEN_MASK ((uint64_t)0xff << SK_TOK_GEN_SHIFT)
#define SK_TOK_PID_SHIFT 10
#define SK_TOK_PID_MASK (((uint64_t)1 << 22) - 1)
#define SK_TOK_NS_SHIFT 32
#define SK_TOK_START_SHIFT 8

static uint64_t *sk_token_word(const sk_lock *l, uint32_t id) { return l->tokens + 2 * (size_t)id; }
static uint64_t *sk_token_owner(const sk_lock *l, uint32_t id) { return l->tokens + 2 * (size_t)id + 1; }
static uint64_t sk_token_gen(uint64_t v) { return (v & SK_TOK_GEN_MASK) >> SK_TOK_GEN_SHIFT; }

/* sk_byte_lock takes (F_WRLCK) or gives back (F_UNLCK) token id's byte on
 * fd, without waiting; sk_ofd_write_locked reports whether some open file
 * description holds a write lock on it. The query is for a read lock, with
 * which only write locks conflict: the read locks anyone who may read the
 * file can place are not reported. An error counts as locked. */
static bool sk_byte_lock(int fd, uint32_t id, short type)
{
	struct flock lk = {.l_type = type, .l_whence = SEEK_SET, .l_start = SK_TOKEN_BASE + id, .l_len = 1};
	int r;
	do
		r = fcntl(fd, F_OFD_SETLK, &lk);
	while (r == -1 && errno == EINTR);
	return r == 0;
}

static bool sk_ofd_write_locked(const sk_lock *l, uint32_t id)
{
	struct flock lk = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = SK_TOKEN_BASE + id, .l_len = 1};
	int r;
	do
		r = fcntl(l->fd, F_OFD_GETLK, &lk);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		return true;
	return lk.l_type != F_UNLCK;
}

/* sk_proc_task reads the state, thread count and start time (clock ticks
 * since boot) of process pid from /proc/PID/task/PID/stat
 * (token_linux.go's procTask). */
static bool sk_proc_task(pid_t pid, char *state, long *threads, uint64_t *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof buf - 1)
			break;
	}
	close(fd);
	buf[n] = 0;
	/* The command name, in parentheses, may hold anything: fields start
	 * after the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return false;
	p++;
	char *f[20];
	int nf = 0;
	while (nf < 20) {
		while (*p == ' ')
			p++;
		if (*p == 0 || *p == '\n')
			break;
		f[nf++] = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	if (nf < 20 || f[0][1] != ' ')
		return false;
	char *end;
	*state = f[0][0];
	*threads = strtol(f[17], &end, 10);
	if (end == f[17])
		return false;
	*start = strtoull(f[19], &end, 10);
	return end != f[19];
}

/* sk_record_alive reports whether token id, whose first word read v, names
 * a live handle (token_linux.go's alive): a claimed record whose holder
 * holds its byte's write lock, or, without OFD, whose process may exist:
 * only one in this PID namespace whose PID no process has, or has as a
 * zombie or as a process started at another time, is dead. */
static bool sk_record_alive(const sk_lock *l, uint32_t id, uint64_t v)
{
	if (!(v & SK_TOK_CLAIMED))
		return false;
	if (v & SK_TOK_OFD)
		return sk_ofd_write_locked(l, id);
	uint64_t ns = v >> SK_TOK_NS_SHIFT;
	pid_t pid = (pid_t)((v >> SK_TOK_PID_SHIFT) & SK_TOK_PID_MASK);
	if (l->self == 0 || ns != l->self >> SK_TOK_NS_SHIFT || pid == 0)
		return true;
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return false;
	char state;
	long threads;
	uint64_t start;
	if (!sk_proc_task(pid, &state, &threads, &start))
		return true; /* hidden (hidepid) or gone meanwhile */
	if ((state == 'Z' || state == 'X') && threads <= 1)
		return false;
	uint64_t owner = atomic_load(A64(sk_token_owner(l, id)));
	if ((owner >> SK_TOK_START_SHIFT) != 0 && (owner & 0xff) == sk_token_gen(v))
		return start == owner >> SK_TOK_START_SHIFT;
	return true;
}

/* sk_alive reports whether the handle with token id is open, in any
 * process. */
static bool sk_alive(const sk_lock *l, uint32_t id)
{
	return sk_record_alive(l, id, atomic_load(A64(sk_token_word(l, id))));
}

/* sk_held is a dead holder's token claimed by sk_hold_dead: its record and
 * the private descriptor holding its byte (-1 without). */
typedef struct {
	uint32_t id;
	uint64_t rec;
	int fd;
} sk_held;

/* sk_hold_dead claims token id for this process while the caller recovers
 * what its dead holder left (token_linux.go's holdDead): it fails while
 * the holder lives or when the record changed. The claim holds the byte
 * too, on a descriptor of its own reopened through /proc/self/fd, so that
 * a caller that dies meanwhile is seen dead at once. */
static bool sk_hold_dead(const sk_lock *l, uint32_t id, sk_held *h)
{
	uint64_t *w = sk_token_word(l, id);
	uint64_t v = atomic_load(A64(w));
	if ((v & SK_TOK_CLAIMED) && sk_record_alive(l, id, v))
		return false;
	h->id = id;
	h->fd = -1;
	h->rec = l->self | ((v + ((uint64_t)1 << SK_TOK_GEN_SHIFT)) & SK_TOK_GEN_MASK) | SK_TOK_CLAIMED;
	if (!atomic_compare_exchange_strong(A64(w), &v, h->rec))
		return false;
	atomic_store(A64(sk_token_owner(l, id)), l->owner | sk_token_gen(h->rec));
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", (int)l->fd);
	int own = open(path, O_RDWR | O_CLOEXEC);
	if (own < 0)
		return true; /* no /proc: the claim is asked by PID */
	uint64_t rec = h->rec;
	if (sk_byte_lock(own, id, F_WRLCK) && atomic_compare_exchange_strong(A64(w), &rec, h->rec | SK_TOK_OFD)) {
		h->rec |= SK_TOK_OFD;
		h->fd = own;
		return true;
	}
	close(own);
	return true;
}

/* sk_release frees a token sk_hold_dead claimed, then lets its byte go. */
static void sk_release(const sk_lock *l, sk_held *h)
{
	uint64_t rec = h->rec;
	atomic_compare_exchange_strong(A64(sk_token_word(l, h->id)), &rec, h->rec & SK_TOK_GEN_MASK);
	if (h->fd >= 0)
		close(h->fd);
}

/* sk_recover_writer clears W when its owner is dead: a token nobody holds,
 * or no owner at all (a damaged word). An owner with this handle's id is a
 * thread of this handle: a dead predecessor with the same id was recovered
 * from when the handle joined the lock (newFileLock). */
static void sk_recover_writer(sk_lock *l)
{
	uint32_t s = atomic_load(A32(l->state));
	if (!(s & SK_W))
		return;
	uint32_t owner = s & SK_OWNER;
	bool held = false;
	sk_held h;
	if (owner == 0 || owner - 1 >= l->nslots) {
		/* damaged: recover */
	} else if (owner - 1 == l->id) {
		return; /* a thread of this handle holds it */
	} else {
		/* Hold the dead holder's token while recovering, so that no new
		 * handle can take its id and lock under the same OWNER before
		 * the compare-and-swap (lock_linux.go's recoverWriter). Holding
		 * it is also the liveness check. */
		if (!sk_hold_dead(l, owner - 1, &h))
			return;
		held = true;
	}
	if (atomic_compare_exchange_strong(A32(l->state), &s, s & (SK_WPARKED | SK_RPARKED))) {
		sk_futex_wake_all(l->state);
		atomic_fetch_add(A32(l->drain), 1);
		sk_futex_wake_all(l->drain);
	}
	if (held)
		sk_release(l, &h);
}

/* sk_sleep waits on the state word while it still reads s (with the
 * parked bit set), for at most timeout ns. When it times out with the lock
 * still held, it recovers the lock from a dead holder. */
static void sk_sleep(sk_lock *l, uint32_t s, uint32_t parked, int64_t timeout)
{
	if (!(s & parked)) {
		if (!atomic_compare_exchange_strong(A32(l->state), &s, s | parked))
			return; /* the word changed: look again */
		s |= parked;
	}
	if (sk_futex_wait(l->state, s, timeout))
		sk_recover_writer(l);
}

/* sk_leave_slot takes one read lock off the handle's slot and, when a
 * writer is waiting for readers to leave, wakes it. */
static void sk_leave_slot(sk_lock *l)
{
	atomic_fetch_sub(A64(l->slot), 1);
	if (atomic_load(A32(l->state)) & SK_W) {
		atomic_fetch_add(A32(l->drain), 1);
		sk_futex_wake_all(l->drain);
	}
}

/* sk_next_pos returns the position of slot id+1 given that of slot id. */
static uint32_t sk_next_pos(const sk_lock *l, uint32_t pos)
{
	if (l->nslots % 8 != 0)
		return pos + 1;
	pos += 8;
	if (pos >= l->nslots)
		pos -= l->nslots - 1;
	return pos;
}

/* sk_drain_readers waits until no slot counts a read lock, clearing the
 * slots of readers that died. A slot that has counted a read lock for
 * SK_PATIENCE has its holder asked about, however often live readers
 * leaving other slots woke the wait meanwhile (lock_linux.go). It returns
 * SK_LOCK_TIMEDOUT when a slot still counts past the bound; the caller then
 * releases W. */
static int sk_drain_readers(sk_lock *l, int64_t *deadline)
{
	uint32_t hw = atomic_load(A32(l->hw));
	if (hw > l->nslots)
		hw = l->nslots;
	/* Slots are spread so that the first n/8 handles each count on a
	 * cache line of their own: slot id is at (id mod n/8)*8 + id div (n/8)
	 * (lock_linux.go's slotAt). pos walks that in id order without the
	 * divisions, which cost more than the rest of an uncontended lock. */
	uint32_t pos = 0;
	for (uint32_t id = 0; id < hw; id++, pos = sk_next_pos(l, pos)) {
		uint64_t *slot = l->slots + pos;
		int64_t since = 0;
		for (;;) {
			uint64_t v = atomic_load(A64(slot));
			if ((uint32_t)v == 0)
				break;
			uint32_t d = atomic_load(A32(l->drain));
			if ((uint32_t)atomic_load(A64(slot)) == 0)
				break;
			if (since == 0)
				since = sk_now();
			int64_t left = sk_wait_left(l, deadline);
			if (left <= 0)
				return SK_LOCK_TIMEDOUT;
			sk_futex_wait(l->drain, d, sk_min(SK_PATIENCE, left));
			if (id == l->id || sk_now() - since < SK_PATIENCE)
				continue;
			since = sk_now();
			if (!sk_alive(l, id)) {
				/* Same generation only: a new handle that took the id
				 * since has reset the slot, and its count is live. */
				atomic_compare_exchange_strong(A64(slot), &v, v & ~(uint64_t)UINT32_MAX);
			}
		}
	}
	return 0;
}

int sk_lock_write(sk_lock *l)
{
	uint32_t me = l->id + 1;
	bool turn = false;
	int64_t turn_since = 0, deadline = 0;
	for (;;) {
		uint32_t s = atomic_load(A32(l->state));
		if (s & SK_W) {
			int64_t left = sk_wait_left(l, &deadline);
			if (left <= 0)
				return SK_LOCK_TIMEDOUT;
			sk_sleep(l, s, SK_WPARKED, sk_min(SK_PATIENCE, left));
			continue;
		}
		if (s & SK_RTURN) {
			/* Parked readers were let in: give them a moment first. */
			if (!turn) {
				turn = true;
				turn_since = sk_now();
			}
			int64_t left = SK_READERS_TURN - (sk_now() - turn_since);
			if (left > 0) {
				sk_sleep(l, s, SK_WPARKED, left);
				continue;
			}
		}
		if (atomic_compare_exchange_strong(A32(l->state), &s,
						   (s & (SK_WPARKED | SK_RPARKED)) | SK_W | me))
			break;
	}
	if (sk_drain_readers(l, &deadline) != 0) {
		sk_unlock_write(l);
		return SK_LOCK_TIMEDOUT;
	}
	return 0;
}

int sk_unlock_write(sk_lock *l)
{
	uint32_t me = l->id + 1;
	for (;;) {
		uint32_t s = atomic_load(A32(l->state));
		if (!(s & SK_W) || (s & SK_OWNER) != me)
			return -1;
		uint32_t next = (s & SK_RPARKED) ? SK_RTURN : 0;
		if (atomic_compare_exchange_strong(A32(l->state), &s, next)) {
			if (s & (SK_WPARKED | SK_RPARKED))
				sk_futex_wake_all(l->state);
			return 0;
		}
	}
}

int sk_lock_read(sk_lock *l)
{
	if (l->slot == NULL)
		return sk_lock_write(l);
	int64_t deadline = 0;
	for (;;) {
		atomic_fetch_add(A64(l->slot), 1);
		uint32_t s = atomic_load(A32(l->state));
		if (!(s & SK_W))
			return 0;
		/* A writer holds the lock or waits for readers: back off. */
		sk_leave_slot(l);
		int64_t left = sk_wait_left(l, &deadline);
		if (left <= 0)
			return SK_LOCK_TIMEDOUT;
		sk_sleep(l, s, SK_RPARKED, sk_min(SK_PATIENCE, left));
	}
}

void sk_unlock_read(sk_lock *l)
{
	if (l->slot == NULL) {
		sk_unlock_write(l);
		return;
	}
	sk_leave_slot(l);
}

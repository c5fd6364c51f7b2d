/*
 * The doorbell protocol (DESIGN.md, "The doorbell protocol") under x86-TSO.
 *
 * Two producers P0, P1 each enqueue MSGS messages on their own SPSC ring to one consumer C
 * and ring C's doorbell (an eventfd) only when C has announced that it sleeps. Spin is
 * sequentially consistent, so the one reordering x86 performs -- a store is delayed in the
 * writing core's FIFO store buffer while later loads go ahead (store->load) -- is modelled
 * explicitly: every plain store goes to the thread's buffer (a channel), a separate drainer
 * process per thread commits the oldest buffered store to memory at any moment, a load first
 * looks for the youngest buffered store of its own thread to the same address (store
 * forwarding), and a fence (mfence, or any locked instruction: xchg, the kernel's locks in a
 * syscall) waits until the buffer is empty. Removing a fence therefore really lets a later
 * load overtake an earlier store.
 *
 * What is abstracted: a ring is its tail index (the producer publishes tail = n; message
 * slots are written before the tail and TSO keeps stores in order, so seeing the tail implies
 * seeing the message); rings never fill (capacity >= MSGS, so producers never read the
 * consumer's head); rx queues and timers are modelled as never pending; epoll_wait and the
 * eventfd read/write are syscalls and act as full fences.
 *
 * Variants (spin -D...):
 *   (none)              the protocol as designed                  -> must verify
 *   NO_PRODUCER_FENCE   producer skips the fence after enqueue    -> lost wakeup
 *   NO_CONSUMER_FENCE   consumer skips the fence after sleeping=1 -> lost wakeup
 *   NO_EXCHANGE         producer uses load + store, not exchange  -> two doorbells per sleep
 *   ALWAYS              `always` mode: ring on every enqueue      -> must verify (no flag)
 *   MSGS=n              messages per producer (default 3)
 *
 * Properties (both are plain assertions, so a -DSAFETY search checks them exhaustively):
 *   lost_wakeup  (a) in every reachable state: C is not blocked in epoll with no doorbell
 *                pending while a ring holds a message and no producer is still between its
 *                enqueue and its doorbell decision (so no wakeup is on its way);
 *                (b) at quiescence (spin's `timeout`: nothing else can move, all producers
 *                done, all store buffers drained): every message has been consumed.
 *   double_ring  at most one doorbell write per sleep: each commit of sleeping=1 to memory
 *                opens a sleep (ghost sleep_open); a producer that decides to ring claims
 *                the open sleep; a doorbell write whose claim found no open sleep (another
 *                producer took it) is a second write for the same sleep.
 *
 * Replaying a counterexample (spin -t) prints the printf narration below, one line per
 * protocol step, and "memory:" lines when a buffered store becomes globally visible.
 */

#ifndef MSGS
#define MSGS 3
#endif

#define NP 2        /* producers: thread ids 0 and 1 */
#define C 2         /* the consumer's thread id */
#define NT 3

/* shared memory: tail of ring 0 and 1 (written by P0, P1), C's sleeping flag */
#define TAIL0 0
#define TAIL1 1
#define SLEEPING 2
#define NV 3

#define SBSIZE 4                 /* store buffer entries; a full buffer stalls the store */

byte mem[NV];
chan sb[NT] = [SBSIZE] of { byte, byte };  /* (address, value), oldest first */
byte npend[NT * NV];  /* stores of thread t to address a still in t's buffer */
byte lastv[NT * NV];  /* the youngest of them: what a load by t of a forwards */

byte doorbell;        /* the eventfd counter */

/* ghosts: not part of the protocol, only read by the assertions */
byte sent[NP];        /* messages issued by each producer (buffered or committed) */
byte head[NP];        /* messages consumed by C from each ring */
bit inflush[NP];      /* producer is between its enqueue and its doorbell decision */
bit asleep;           /* C is blocked in epoll_wait */
bit sleep_open;       /* a commit of sleeping=1 has not been claimed by a producer yet */
bit lost_wakeup;
bit double_ring;

/*
 * Granularity. Only three kinds of step are visible to other threads: a load from memory, a
 * commit from a store buffer (the drainer), and the atomic operations (xchg, eventfd). Putting
 * a store into the own buffer, a fence that finds the buffer empty, and local or ghost
 * updates are invisible, so they are merged into the adjacent visible step with atomic{}.
 * That removes interleavings that cannot differ in what any thread observes, not behaviours.
 */

/* A plain store: into the thread's store buffer. Use inside atomic{}. */
inline STORE(t, a, v) {
    sb[t]!a, v;
    npend[t * NV + a]++;
    lastv[t * NV + a] = v
}

/* A plain load: store forwarding from the own buffer, else memory. Use inside atomic{}. */
inline LOAD(t, a, r) {
    if
    :: npend[t * NV + a] > 0 -> r = lastv[t * NV + a]
    :: else -> r = mem[a]
    fi
}

/* mfence / locked instruction / syscall entry: the step is only enabled once the thread's
 * own store buffer has drained. Use as the guard of an atomic{}. */
#define FENCED(t) empty(sb[t])

/* Property (a). It can only become false when C starts to sleep or a producer ends a flush
 * (the doorbell is only cleared and head only advanced while C is awake, and sent only grows
 * together with inflush being set), so checking it at exactly those two steps checks it in
 * every reachable state. */
inline CHECK_NO_LOST_WAKEUP() {
    lost_wakeup = (asleep && doorbell == 0 && !inflush[0] && !inflush[1] &&
                   (sent[0] != head[0] || sent[1] != head[1]));
    assert(!lost_wakeup)
}

/* End of a producer's flush: it will not ring for this message any more. */
inline END_FLUSH(p) {
    inflush[p] = 0;
    s = 0;
    my_claim = 0;
    CHECK_NO_LOST_WAKEUP()
}

/* The producer decides to ring for the sleep it observed: it claims that sleep. */
inline CLAIM() {
    my_claim = sleep_open;
    sleep_open = 0
}

/* write(doorbell_fd, 1): a syscall, so fenced, then an atomic add in the kernel. A doorbell
 * write for a sleep another producer already claimed is a second write for one sleep. */
inline RING(p) {
    atomic {
        FENCED(p) ->
        doorbell++;
        printf("P%d: write(doorbell)\n", p);
#ifndef ALWAYS  /* `always` rings on every flush by design */
        double_ring = !my_claim;
        assert(!double_ring);
#endif
        END_FLUSH(p)
    }
}

/* The memory subsystem: commits the oldest store of thread t whenever it likes. */
proctype drainer(byte t) {
    byte a, v;
end:
    do
    :: atomic {
        sb[t]?a, v ->
        mem[a] = v;
        npend[t * NV + a]--;
        if
        :: npend[t * NV + a] == 0 -> lastv[t * NV + a] = 0  /* canonical state */
        :: else
        fi;
        if
        :: a == SLEEPING -> printf("    memory: C's sleeping=%d now visible\n", v)
        :: else -> printf("    memory: P%d's tail=%d now visible\n", a, v)
        fi;
        if
        :: a == SLEEPING && v == 1 -> sleep_open = 1  /* a new sleep begins */
        :: else
        fi;
        a = 0;
        v = 0
       }
    od
}

proctype producer(byte p) {
    byte s;
    bit my_claim;
    do
    :: sent[p] < MSGS ->
        /* enqueue burst to C's ring: one message, or two (one fence per flush, not per
         * message); each publishes the new tail */
        atomic {
            inflush[p] = 1;
            sent[p]++;
            STORE(p, p, sent[p]);
            printf("P%d: enqueue message %d (tail=%d into P%d's store buffer)\n", p, sent[p],
                   sent[p], p)
        };
        if
        :: atomic {
            sent[p] < MSGS ->
            sent[p]++;
            STORE(p, p, sent[p]);
            printf("P%d: enqueue message %d (tail=%d into P%d's store buffer)\n", p, sent[p],
                   sent[p], p)
           }
        :: skip
        fi;
#ifdef ALWAYS
        RING(p)  /* write the doorbell, unconditionally */
#else
        /* 1. full fence: the tail is globally visible before we read C's flag;
         * 2. if C.sleeping ... */
        atomic {
#ifndef NO_PRODUCER_FENCE
            FENCED(p) ->
#endif
            LOAD(p, SLEEPING, s);
            printf("P%d: load sleeping = %d\n", p, s);
            if
            :: s == 0 -> END_FLUSH(p)
#ifdef NO_EXCHANGE
            :: else -> CLAIM()
#else
            :: else
#endif
            fi
        };
        if
        :: s == 1 ->
#ifdef NO_EXCHANGE
            /* ... sleeping = 0 as a plain store, then ring: two producers can both ring */
            atomic { STORE(p, SLEEPING, 0); printf("P%d: store sleeping=0 (buffered)\n", p) };
            RING(p)
#else
            /* ... and exchange(C.sleeping, 0) == 1 (xchg is locked: fenced, atomic) */
            atomic {
                FENCED(p) ->
                s = mem[SLEEPING];
                mem[SLEEPING] = 0;
                printf("P%d: xchg(sleeping, 0) = %d\n", p, s);
                if
                :: s == 0 -> END_FLUSH(p)
                :: else -> CLAIM()
                fi
            };
            if
            :: s == 1 -> RING(p)  /* write the doorbell */
            :: else
            fi
#endif
        :: else
        fi
#endif
    :: else -> break
    od
}

proctype consumer() {
    byte t0, t1;
poll:
    /* drain every inbound ring (the load of a tail and taking the messages up to it are one
     * step: head is C's private state) */
    atomic { LOAD(C, TAIL0, t0); head[0] = t0; t0 = 0 };
    /* ... then, nothing else to do: try to sleep. 1. store C.sleeping = 1 */
    atomic {
        LOAD(C, TAIL1, t1);
        head[1] = t1;
        t1 = 0;
        printf("C: poll: consumed up to P0:%d P1:%d\n", head[0], head[1]);
        STORE(C, SLEEPING, 1);
        printf("C: store sleeping=1 (into C's store buffer)\n")
    };

    /* 2. full fence: the flag is globally visible before we re-read the rings;
     * 3. re-check every inbound ring */
    atomic {
#ifndef NO_CONSUMER_FENCE
        FENCED(C) ->
#endif
        LOAD(C, TAIL0, t0)
    };
    atomic {
        LOAD(C, TAIL1, t1);
        printf("C: re-check: tail0=%d tail1=%d\n", t0, t1);
        if
        :: t0 != head[0] || t1 != head[1] ->
            /* pending: C.sleeping = 0 and keep polling */
            t0 = 0;
            t1 = 0;
            STORE(C, SLEEPING, 0);
            goto poll
        :: else -> t0 = 0; t1 = 0
        fi
    };

    /* 4. epoll_wait(doorbell): entering the syscall drains the buffer, then block */
    atomic { FENCED(C) -> asleep = 1; printf("C: epoll_wait: asleep\n"); CHECK_NO_LOST_WAKEUP() };
    if
    :: atomic {
        doorbell > 0 ->
        asleep = 0;
        printf("C: woken by the doorbell; store sleeping=0 (buffered)\n");
        STORE(C, SLEEPING, 0)  /* 5. C.sleeping = 0 */
       }
    :: timeout ->
        /* nothing can ever wake C again: every message must have been consumed (b) */
        lost_wakeup = (mem[TAIL0] != head[0] || mem[TAIL1] != head[1]);
        printf("C: asleep for good with tail0=%d tail1=%d consumed P0:%d P1:%d\n", mem[TAIL0],
               mem[TAIL1], head[0], head[1]);
        assert(!lost_wakeup);
        goto done
    fi;
    /* 5. drain the doorbell eventfd: read(2) is a syscall */
    atomic { FENCED(C) -> doorbell = 0 };
    goto poll;
done:
    skip
}

init {
    atomic {
        run drainer(0);
        run drainer(1);
        run drainer(C);
        run producer(0);
        run producer(1);
        run consumer()
    }
}

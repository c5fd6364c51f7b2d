// Hierarchical timing wheel: see the header for the shape and the contract.
//
// Why the invariants hold. Write digit_L(x) for bits [6L, 6L+6) of a tick x.
//
// I1 (placement). place() puts a timer with expiry tick e >= cur at the level of the highest
// digit in which e and cur differ. They agree above that digit and e > cur, so e's digit
// there is the larger one: strictly greater than cur's for L >= 1, and >= for level 0
// (e == cur lands at level 0, slot digit_0(cur)). Consequences: a level-0 slot holds one tick
// (all of its timers agree with cur on digits 1..); every level-L timer lies inside cur's
// current block of 64^(L+1) ticks while every level-(L+1) timer lies beyond it, so levels are
// ordered; and within a level, slots are ordered by digit.
//
// I1 is preserved when cur moves from c to c' provided no slot is "passed over": for each
// level L and occupied slot d, the tick at which digit_L(cur) becomes d with the lower
// digits zero -- base_{L+1}(c) | d << 6L, the slot's "event" -- must not be skipped. Moving
// to any c' below every event keeps c' inside the same 64^(L+1) block as c for each level
// with timers, with digit_L(c') < d, so each timer still differs from c' first at its own
// level. At an event tick the slot's digit equals cur's: those timers now agree with cur on
// digit L as well and must be re-placed (cascaded); they land strictly lower (I2). Several
// levels can have their event at the same tick (e.g. when cur's low digits are all zero), so
// cascade_at_cur() looks at every level. Re-placing never targets a slot whose event is
// cur itself (place() only uses digits > cur's at L >= 1), so one pass suffices and the
// order of the levels does not matter.
//
// I3 (overflow). An overflow timer differs from cur above the top digit, so it expires in a
// later 2^30-tick block. overflow_min_ (a lower bound of the overflow deadlines) names the
// earliest such block; its first tick is an event like a slot's, and at that event the whole
// list is re-placed: what now fits goes into the wheel, the rest stays. The bound may be
// stale-low after a cancel; that only causes an early, harmless re-examination which
// recomputes it.
//
// advance(now) therefore walks from event to event (fire level-0 slot, or cascade), never
// tick by tick, up to target = now >> shift; nothing between events needs any work.
#include "ferry/reactor/timer_wheel.h"

#include <algorithm>

namespace ferry::reactor {

namespace {

constexpr unsigned top_shift = timer_wheel::levels * timer_wheel::level_bits;  // 30
constexpr uint64_t slot_mask = timer_wheel::slots - 1;

unsigned ctz(uint64_t x) noexcept {
    return static_cast<unsigned>(__builtin_ctzll(x));
}

}  // namespace

void timer_wheel::list_push_back(link &head, link &n) noexcept {
    n.prev_ = head.prev_;
    n.next_ = &head;
    head.prev_->next_ = &n;
    head.prev_ = &n;
}

void timer_wheel::list_unlink(link &n) noexcept {
    n.prev_->next_ = n.next_;
    n.next_->prev_ = n.prev_;
    n.next_ = n.prev_ = nullptr;
}

void timer_wheel::list_splice_back(link &to, link &from) noexcept {
    if (list_empty(from)) {
        return;
    }
    link *first = from.next_;
    link *last = from.prev_;
    first->prev_ = to.prev_;
    to.prev_->next_ = first;
    last->next_ = &to;
    to.prev_ = last;
    list_init(from);
}

timer_wheel::timer_wheel(uint64_t now, unsigned tick_shift) noexcept
    : now_(now), cur_(now >> tick_shift), tick_shift_(tick_shift) {
    assert(tick_shift <= max_tick_shift);
    for (unsigned l = 0; l < levels; ++l) {
        for (unsigned s = 0; s < slots; ++s) {
            list_init(slot_[l][s]);
            slot_min_[l][s] = UINT64_MAX;
        }
    }
    list_init(overflow_);
    list_init(due_);
}

timer_wheel::~timer_wheel() {
    assert(!in_advance_ && "a callback destroyed its wheel");
    auto disarm_all = [](link &head) {
        while (!list_empty(head)) {
            timer &t = *as_timer(head.next_);
            list_unlink(t);
            t.where_ = timer::unarmed_;
        }
    };
    for (auto &level : slot_) {
        for (auto &head : level) {
            disarm_all(head);
        }
    }
    disarm_all(overflow_);
    disarm_all(due_);
}

void timer_wheel::place(timer &t) noexcept {
    // A deadline already in the past (tick < cur) is due at once: file it with the current
    // tick, whose slot the next advance() scans (slot_min_ <= now makes sure it does).
    const uint64_t e = std::max(t.deadline_ >> tick_shift_, cur_);
    const uint64_t diff = e ^ cur_;
    const unsigned level =
        diff == 0 ? 0 : (63 - static_cast<unsigned>(__builtin_clzll(diff))) / level_bits;
    if (level >= levels) {
        list_push_back(overflow_, t);
        t.where_ = timer::overflow_;
        overflow_min_ = std::min(overflow_min_, t.deadline_);
        return;
    }
    const unsigned s = static_cast<unsigned>((e >> (level * level_bits)) & slot_mask);
    list_push_back(slot_[level][s], t);
    t.where_ = static_cast<uint16_t>(level * slots + s);
    occupied_[level] |= uint64_t{1} << s;
    slot_min_[level][s] = std::min(slot_min_[level][s], t.deadline_);
}

void timer_wheel::unlink(timer &t) noexcept {
    list_unlink(t);
    const uint16_t where = t.where_;
    t.where_ = timer::unarmed_;
    if (where == timer::due_) {
        return;
    }
    if (where == timer::overflow_) {
        if (list_empty(overflow_)) {
            overflow_min_ = UINT64_MAX;
        }
        return;
    }
    // Leaving a non-empty slot keeps its minimum as a (possibly stale) lower bound: finding
    // the new minimum would cost O(slot), and a low bound is safe (see next_deadline()).
    const unsigned level = where / slots;
    const unsigned s = where % slots;
    if (list_empty(slot_[level][s])) {
        occupied_[level] &= ~(uint64_t{1} << s);
        slot_min_[level][s] = UINT64_MAX;
    }
}

void timer_wheel::arm(timer &t, uint64_t deadline) noexcept {
    assert(t.fn_ != nullptr && "arming a timer without a callback");
    if (t.armed()) {
        unlink(t);
    } else {
        ++pending_;
    }
    t.deadline_ = deadline;
    place(t);
}

bool timer_wheel::cancel(timer &t) noexcept {
    if (!t.armed()) {
        return false;
    }
    unlink(t);
    --pending_;
    return true;
}

void timer_wheel::cascade_slot(unsigned level, unsigned slot) noexcept {
    link batch;
    list_init(batch);
    list_splice_back(batch, slot_[level][slot]);
    occupied_[level] &= ~(uint64_t{1} << slot);
    slot_min_[level][slot] = UINT64_MAX;
    while (!list_empty(batch)) {
        timer &t = *as_timer(batch.next_);
        list_unlink(t);
        place(t);
        // I2: cascading only ever moves a timer down.
        assert(t.where_ / slots < level);
    }
}

void timer_wheel::reexamine_overflow() noexcept {
    link batch;
    list_init(batch);
    list_splice_back(batch, overflow_);
    overflow_min_ = UINT64_MAX;
    while (!list_empty(batch)) {
        timer &t = *as_timer(batch.next_);
        list_unlink(t);
        place(t);
    }
}

void timer_wheel::cascade_at_cur() noexcept {
    if (!list_empty(overflow_) &&
        ((overflow_min_ >> tick_shift_) >> top_shift) <= (cur_ >> top_shift)) {
        reexamine_overflow();
    }
    for (unsigned level = levels - 1; level >= 1; --level) {
        const unsigned s = static_cast<unsigned>((cur_ >> (level * level_bits)) & slot_mask);
        if (occupied_[level] & (uint64_t{1} << s)) {
            cascade_slot(level, s);
        }
    }
}

uint64_t timer_wheel::next_event_tick() const noexcept {
    // By I1 every occupied bit of a level is at or after cur's digit, so the lowest set bit is
    // the level's next event. Level 0's bit for cur itself has been taken by the caller.
    uint64_t best = UINT64_MAX;
    for (unsigned level = 0; level < levels; ++level) {
        if (occupied_[level] == 0) {
            continue;
        }
        const unsigned shift = level * level_bits;
        const unsigned block = shift + level_bits;
        const uint64_t base = block >= 64 ? 0 : (cur_ >> block) << block;
        best = std::min(best, base | (uint64_t{ctz(occupied_[level])} << shift));
    }
    if (!list_empty(overflow_)) {
        best = std::min(best, ((overflow_min_ >> tick_shift_) >> top_shift) << top_shift);
    }
    assert(best > cur_);
    return best;
}

void timer_wheel::collect_current(uint64_t now) noexcept {
    const unsigned s = static_cast<unsigned>(cur_ & slot_mask);
    // The minimum gates the scan: an advance() per poll iteration inside one tick costs O(1)
    // until something in the slot is really due (or a stale minimum says it may be, once).
    if (!(occupied_[0] & (uint64_t{1} << s)) || slot_min_[0][s] > now) {
        return;
    }
    link &head = slot_[0][s];
    uint64_t rest_min = UINT64_MAX;
    for (link *l = head.next_; l != &head;) {
        timer &t = *as_timer(l);
        l = l->next_;
        if (t.deadline_ <= now) {
            list_unlink(t);
            list_push_back(due_, t);
            t.where_ = timer::due_;
        } else {
            rest_min = std::min(rest_min, t.deadline_);
        }
    }
    slot_min_[0][s] = rest_min;
    if (list_empty(head)) {
        occupied_[0] &= ~(uint64_t{1} << s);
    }
}

size_t timer_wheel::advance(uint64_t now) noexcept {
    assert(!in_advance_ && "advance() called from a timer callback");
    now = std::max(now, now_);
    const uint64_t target = now >> tick_shift_;

    // Phase 1: collect, in tick order, every timer due at `now` onto due_. No callback runs
    // here, so the wheel is never observed half-moved.
    while (cur_ < target) {
        // All of tick cur_ is <= now: its whole slot is due.
        const unsigned s = static_cast<unsigned>(cur_ & slot_mask);
        if (occupied_[0] & (uint64_t{1} << s)) {
            link &head = slot_[0][s];
            for (link *l = head.next_; l != &head; l = l->next_) {
                as_timer(l)->where_ = timer::due_;
            }
            list_splice_back(due_, head);
            occupied_[0] &= ~(uint64_t{1} << s);
            slot_min_[0][s] = UINT64_MAX;
        }
        const uint64_t event = next_event_tick();
        if (event > target) {
            cur_ = target;  // passes over no event: I1 holds at target
            break;
        }
        cur_ = event;
        cascade_at_cur();
    }
    now_ = now;
    collect_current(now);

    // Phase 2: fire. cur_ and now_ are final, so anything a callback arms is placed relative
    // to `now` and lands in the wheel, not in due_: it waits for the next advance(). A
    // callback that cancels or re-arms a collected timer unlinks it from due_ (O(1)), so it
    // does not fire.
    in_advance_ = true;
    size_t fired = 0;
    while (!list_empty(due_)) {
        timer &t = *as_timer(due_.next_);
        list_unlink(t);
        t.where_ = timer::unarmed_;
        --pending_;
        ++fired;
        t.fn_(t.ctx_, now_);
    }
    in_advance_ = false;
    return fired;
}

uint64_t timer_wheel::next_deadline() const noexcept {
    // By I1 the lowest non-empty level holds the earliest timers, in its lowest occupied slot;
    // by I3 overflow timers come after everything in the wheel.
    for (unsigned level = 0; level < levels; ++level) {
        if (occupied_[level] != 0) {
            return slot_min_[level][ctz(occupied_[level])];
        }
    }
    return overflow_min_;  // UINT64_MAX == no_deadline when empty
}

}  // namespace ferry::reactor

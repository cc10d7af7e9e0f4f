#include "servo.h"

#include <stddef.h>

#include "udiv.h"

typedef struct {
    servo_cal_t cal;
    int16_t start_cdeg; /* interpolation from start to goal over [t0, t0 + duration] */
    int16_t goal_cdeg;
    uint32_t t0_ms;
    uint16_t duration_ms;
    int16_t command_cdeg;
    int32_t estimate_mcdeg; /* servo model state [millicentidegrees] */
    /* the calibration's pulse formula, prepared at configuration (servo_pulse_us) */
    int32_t pulse_base; /* num - pulse_min * den at joint angle 0 */
    int16_t pulse_gain; /* d num / d angle = 2 * direction * span */
    int32_t pulse_full; /* span * den: num - pulse_min * den at pulse_max */
    uint32_t pulse_den; /* 2 * travel <= 72000 */
} channel_t;

static channel_t channels[SERVO_CHANNELS];
static uint16_t speed_cdeg_per_s;
/* millisecond clock built from microsecond deltas, so the 2^32 us wrap is seamless */
static uint32_t clock_ms;
static uint32_t clock_rem_us;
static uint32_t last_us;
static bool changed; /* a target, calibration or speed changed since the last update */

static const servo_cal_t default_cal = {
    .direction = 1,
    .zero_offset_cdeg = 0,
    .min_cdeg = -9000,
    .max_cdeg = 9000,
    .pulse_min_us = SERVO_PULSE_MIN_US,
    .pulse_max_us = SERVO_PULSE_MAX_US,
    .travel_cdeg = 18000,
};

static int16_t clamp16(int32_t v, int16_t lo, int16_t hi)
{
    return (int16_t)(v < lo ? lo : v > hi ? hi : v);
}

/* Take a calibration and prepare its pulse formula (PROTOCOL.md, "Calibration"): with
 * span = pulse_max - pulse_min and den = 2 * travel, the pulse rounded half up is
 * floor(num / den), num = (pulse_min + pulse_max) * travel + 2 * servo_angle * span + travel. */
static void set_cal(channel_t *c, const servo_cal_t *cal)
{
    int32_t span = (int32_t)cal->pulse_max_us - cal->pulse_min_us;
    int32_t den = 2 * (int32_t)cal->travel_cdeg;
    c->cal = *cal;
    c->pulse_den = (uint32_t)den;
    c->pulse_gain = (int16_t)(2 * cal->direction * span);
    c->pulse_full = span * den;
    c->pulse_base = ((int32_t)cal->pulse_max_us - cal->pulse_min_us) * cal->travel_cdeg +
                    2 * (int32_t)cal->zero_offset_cdeg * span + cal->travel_cdeg;
}

void servo_init(uint32_t now_us)
{
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        channels[i] = (channel_t){0};
        set_cal(&channels[i], &default_cal);
    }
    speed_cdeg_per_s = 60000u;
    clock_ms = 0;
    clock_rem_us = 0;
    last_us = now_us;
    changed = true;
}

/* Milliseconds from the clock's last advance to now_us; the microseconds left in rem_us. */
static uint32_t pending_ms(uint32_t now_us, uint32_t *rem_us)
{
    uint32_t us = clock_rem_us + (now_us - last_us);
    /* passes are milliseconds apart: the short division unless the loop stood still */
    uint32_t ms = us < (1000uL << 16) ? udiv_small(us, 1000u, 16) : us / 1000u;
    *rem_us = us - ms * 1000u;
    return ms;
}

/* Advance the millisecond clock to now_us; returns the milliseconds that passed. */
static uint32_t advance_clock(uint32_t now_us)
{
    uint32_t ms = pending_ms(now_us, &clock_rem_us);
    last_us = now_us;
    clock_ms += ms;
    return ms;
}

bool servo_configure(uint8_t channel, const servo_cal_t *cal)
{
    bool ok = channel < SERVO_CHANNELS && (cal->direction == 1 || cal->direction == -1) &&
              -SERVO_ANGLE_LIMIT_CDEG <= cal->min_cdeg && cal->min_cdeg < cal->max_cdeg &&
              cal->max_cdeg <= SERVO_ANGLE_LIMIT_CDEG &&
              -SERVO_ANGLE_LIMIT_CDEG <= cal->zero_offset_cdeg &&
              cal->zero_offset_cdeg <= SERVO_ANGLE_LIMIT_CDEG &&
              SERVO_PULSE_MIN_US <= cal->pulse_min_us && cal->pulse_min_us < cal->pulse_max_us &&
              cal->pulse_max_us <= SERVO_PULSE_MAX_US && cal->travel_cdeg > 0 &&
              cal->travel_cdeg <= 2u * SERVO_ANGLE_LIMIT_CDEG;
    if (ok) {
        channel_t *c = &channels[channel];
        set_cal(c, cal);
        c->goal_cdeg = clamp16(c->goal_cdeg, cal->min_cdeg, cal->max_cdeg);
        c->start_cdeg = clamp16(c->start_cdeg, cal->min_cdeg, cal->max_cdeg);
        changed = true;
    }
    return ok;
}

void servo_set_speed(uint16_t cdeg_per_s)
{
    speed_cdeg_per_s = cdeg_per_s;
    changed = true;
}

/* floor(e * 2^15 / d) for e < d: the fraction's bits one by one, in 16-bit arithmetic
 * (the remainder stays below d; a doubled one that carries out of 16 bits exceeds d). */
static uint16_t frac15(uint16_t e, uint16_t d)
{
    uint16_t q = 0;
    for (uint8_t i = 0; i < 15; i++) {
        bool carry = e & 0x8000u;
        e = (uint16_t)(e << 1);
        q = (uint16_t)(q << 1);
        if (carry || e >= d) {
            e = (uint16_t)(e - d);
            q |= 1u;
        }
    }
    return q;
}

/* Linear interpolation; the fraction is kept in 1/32768 so the product fits in 32 bits. */
static int16_t interpolate(const channel_t *c, uint32_t now_ms)
{
    uint32_t elapsed = now_ms - c->t0_ms;
    if (elapsed >= c->duration_ms) {
        return c->goal_cdeg;
    }
    int32_t frac = frac15((uint16_t)elapsed, c->duration_ms); /* elapsed < duration */
    return (int16_t)(c->start_cdeg + ((((int32_t)c->goal_cdeg - c->start_cdeg) * frac) >> 15));
}

uint16_t servo_set_targets(uint8_t first, uint8_t count, const int16_t *target_cdeg,
                           uint16_t duration_ms, uint32_t now_us)
{
    /* the addressed channels start from where their command is now; the others (and the
     * clock) catch up at the next servo_update, to the same commands */
    uint32_t rem_us;
    uint32_t now_ms = clock_ms + pending_ms(now_us, &rem_us);
    uint16_t clamped = 0;
    for (uint8_t i = 0; i < count && first + i < (int)SERVO_CHANNELS; i++) {
        channel_t *c = &channels[first + i];
        int16_t goal = clamp16(target_cdeg[i], c->cal.min_cdeg, c->cal.max_cdeg);
        if (goal != target_cdeg[i]) {
            clamped |= (uint16_t)(1u << (first + i));
        }
        c->start_cdeg = interpolate(c, now_ms);
        c->goal_cdeg = goal;
        c->t0_ms = now_ms;
        c->duration_ms = duration_ms;
        c->command_cdeg = duration_ms ? c->start_cdeg : goal; /* what servo_update gives */
        if (speed_cdeg_per_s == 0) {
            c->estimate_mcdeg = (int32_t)c->command_cdeg * 1000;
        }
    }
    return clamped;
}

void servo_hold(uint32_t now_us)
{
    servo_update(now_us);
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        channels[i].goal_cdeg = channels[i].command_cdeg;
        channels[i].duration_ms = 0;
    }
    changed = true;
}

static int32_t approach(int32_t value, int32_t target, int32_t step)
{
    if (target > value + step) {
        return value + step;
    }
    if (target < value - step) {
        return value - step;
    }
    return target;
}

void servo_update(uint32_t now_us)
{
    uint32_t dt_ms = advance_clock(now_us);
    if (dt_ms == 0 && !changed) {
        return; /* same millisecond, same inputs: every channel is where it was */
    }
    changed = false;
    /* [mcdeg] = [cdeg/s] * [ms]; dt is capped so the product stays in 32 bits */
    int32_t step = (int32_t)speed_cdeg_per_s * (int32_t)(dt_ms < 1000u ? dt_ms : 1000u);
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        channel_t *c = &channels[i];
        c->command_cdeg = interpolate(c, clock_ms);
        int32_t command_mcdeg = (int32_t)c->command_cdeg * 1000;
        c->estimate_mcdeg = speed_cdeg_per_s ? approach(c->estimate_mcdeg, command_mcdeg, step)
                                             : command_mcdeg;
    }
}

int16_t servo_command_cdeg(uint8_t channel)
{
    return channels[channel].command_cdeg;
}

int16_t servo_estimate_cdeg(uint8_t channel)
{
    /* |estimate| <= 180 deg = 18 000 000 mcdeg < 1000 << 15; truncated toward zero */
    int32_t e = channels[channel].estimate_mcdeg;
    int16_t q = (int16_t)udiv_small((uint32_t)(e < 0 ? -e : e), 1000u, 15);
    return e < 0 ? (int16_t)-q : q;
}

bool servo_changed(void)
{
    return changed;
}

bool servo_moving(void)
{
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        if (channels[i].command_cdeg != channels[i].goal_cdeg) {
            return true;
        }
    }
    return false;
}

uint16_t servo_pulse_us(uint8_t channel, int16_t angle_cdeg)
{
    const channel_t *c = &channels[channel];
    /* r = num - pulse_min * den; the quotient r / den is below span <= 2000 < 2^11 where
     * the pulse is not clamped (den << 11 < 2^28) */
    int32_t r = c->pulse_base + (int32_t)c->pulse_gain * angle_cdeg;
    if (r < 0) {
        return c->cal.pulse_min_us;
    }
    if (r >= c->pulse_full) {
        return c->cal.pulse_max_us;
    }
    return (uint16_t)(c->cal.pulse_min_us + udiv_small((uint32_t)r, c->pulse_den, 11));
}

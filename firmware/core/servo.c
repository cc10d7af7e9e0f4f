#include "servo.h"

#include <stddef.h>

typedef struct {
    servo_cal_t cal;
    int16_t start_cdeg; /* interpolation from start to goal over [t0, t0 + duration] */
    int16_t goal_cdeg;
    uint32_t t0_ms;
    uint16_t duration_ms;
    int16_t command_cdeg;
    int32_t estimate_mcdeg; /* servo model state [millicentidegrees] */
} channel_t;

static channel_t channels[SERVO_CHANNELS];
static uint16_t speed_cdeg_per_s;
/* millisecond clock built from microsecond deltas, so the 2^32 us wrap is seamless */
static uint32_t clock_ms;
static uint32_t clock_rem_us;
static uint32_t last_us;

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

void servo_init(uint32_t now_us)
{
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        channels[i] = (channel_t){.cal = default_cal};
    }
    speed_cdeg_per_s = 60000u;
    clock_ms = 0;
    clock_rem_us = 0;
    last_us = now_us;
}

/* Advance the millisecond clock to now_us; returns the milliseconds that passed. */
static uint32_t advance_clock(uint32_t now_us)
{
    uint32_t us = clock_rem_us + (now_us - last_us);
    last_us = now_us;
    clock_rem_us = us % 1000u;
    clock_ms += us / 1000u;
    return us / 1000u;
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
        c->cal = *cal;
        c->goal_cdeg = clamp16(c->goal_cdeg, cal->min_cdeg, cal->max_cdeg);
        c->start_cdeg = clamp16(c->start_cdeg, cal->min_cdeg, cal->max_cdeg);
    }
    return ok;
}

void servo_set_speed(uint16_t cdeg_per_s)
{
    speed_cdeg_per_s = cdeg_per_s;
}

uint16_t servo_set_targets(uint8_t first, uint8_t count, const int16_t *target_cdeg,
                           uint16_t duration_ms, uint32_t now_us)
{
    uint16_t clamped = 0;
    servo_update(now_us); /* start from where the command is now */
    for (uint8_t i = 0; i < count && first + i < (int)SERVO_CHANNELS; i++) {
        channel_t *c = &channels[first + i];
        int16_t goal = clamp16(target_cdeg[i], c->cal.min_cdeg, c->cal.max_cdeg);
        if (goal != target_cdeg[i]) {
            clamped |= (uint16_t)(1u << (first + i));
        }
        c->start_cdeg = c->command_cdeg;
        c->goal_cdeg = goal;
        c->t0_ms = clock_ms;
        c->duration_ms = duration_ms;
    }
    servo_update(now_us);
    return clamped;
}

void servo_hold(uint32_t now_us)
{
    servo_update(now_us);
    for (uint8_t i = 0; i < SERVO_CHANNELS; i++) {
        channels[i].goal_cdeg = channels[i].command_cdeg;
        channels[i].duration_ms = 0;
    }
}

/* Linear interpolation; the fraction is kept in 1/32768 so the product fits in 32 bits. */
static int16_t interpolate(const channel_t *c, uint32_t now_ms)
{
    uint32_t elapsed = now_ms - c->t0_ms;
    if (elapsed >= c->duration_ms) {
        return c->goal_cdeg;
    }
    int32_t frac = (int32_t)((elapsed << 15) / c->duration_ms);
    return (int16_t)(c->start_cdeg + ((((int32_t)c->goal_cdeg - c->start_cdeg) * frac) >> 15));
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
    return (int16_t)(channels[channel].estimate_mcdeg / 1000);
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
    const servo_cal_t *cal = &channels[channel].cal;
    int32_t servo_cdeg = (int32_t)cal->direction * angle_cdeg + cal->zero_offset_cdeg;
    int32_t span = (int32_t)cal->pulse_max_us - cal->pulse_min_us;
    int32_t den = 2 * (int32_t)cal->travel_cdeg;
    /* pulse = centre + servo_angle * span / travel, rounded half up */
    int32_t num = ((int32_t)cal->pulse_min_us + cal->pulse_max_us) * cal->travel_cdeg +
                  2 * servo_cdeg * span + den / 2;
    int32_t pulse = num < 0 ? 0 : num / den;
    return (uint16_t)(pulse < cal->pulse_min_us   ? cal->pulse_min_us
                      : pulse > cal->pulse_max_us ? cal->pulse_max_us
                                                  : pulse);
}

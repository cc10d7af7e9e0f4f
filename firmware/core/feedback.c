#include "feedback.h"

#include "../hal/hal.h"
#include "udiv.h"

static feedback_cal_t cal[SERVO_CHANNELS];
static uint16_t configured; /* channels with a calibration */
static uint16_t sampled;    /* configured channels whose filter holds a value */
static uint16_t filtered[SERVO_CHANNELS]; /* [1/32 count] */
static uint32_t next_step_us;

void feedback_init(uint32_t now_us)
{
    configured = 0;
    sampled = 0;
    next_step_us = now_us + FEEDBACK_PERIOD_US;
    hal_adc_select(0);
}

static bool valid(const feedback_cal_t *c)
{
    return c->adc_lo < c->adc_hi && c->adc_hi <= FEEDBACK_ADC_MAX &&
           c->angle_lo_cdeg != c->angle_hi_cdeg &&
           c->angle_lo_cdeg >= -SERVO_ANGLE_LIMIT_CDEG &&
           c->angle_lo_cdeg <= SERVO_ANGLE_LIMIT_CDEG &&
           c->angle_hi_cdeg >= -SERVO_ANGLE_LIMIT_CDEG &&
           c->angle_hi_cdeg <= SERVO_ANGLE_LIMIT_CDEG;
}

bool feedback_configure(uint8_t channel, const feedback_cal_t *c)
{
    if (channel >= SERVO_CHANNELS || (c != NULL && !valid(c))) {
        return false;
    }
    uint16_t bit = (uint16_t)(1u << channel);
    if (c != NULL) {
        cal[channel] = *c;
        configured |= bit;
    } else {
        configured &= (uint16_t)~bit;
        sampled &= (uint16_t)~bit;
    }
    hal_adc_select(configured);
    return true;
}

uint16_t feedback_channels(void)
{
    return configured;
}

void feedback_update(uint32_t now_us)
{
    if ((int32_t)(now_us - next_step_us) < 0) {
        return;
    }
    /* one step per period; a late pass does not catch up */
    next_step_us = (now_us - next_step_us < FEEDBACK_PERIOD_US) ? next_step_us + FEEDBACK_PERIOD_US
                                                                : now_us + FEEDBACK_PERIOD_US;
    uint16_t bit = 1;
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++, bit <<= 1) {
        uint16_t raw;
        if (!(configured & bit) || !hal_adc_take(ch, &raw)) {
            continue; /* no new conversion: the filter holds */
        }
        uint16_t x = (uint16_t)(raw << FEEDBACK_FRAC); /* <= 1023 * 32: no overflow */
        if (sampled & bit) {
            int16_t d = (int16_t)(x - filtered[ch]);
            /* y += (x - y) / 4, rounded away from zero: y reaches a constant x exactly */
            int16_t step = (int16_t)((d + (d >= 0 ? 3 : -3)) / (1 << FEEDBACK_SHIFT));
            filtered[ch] = (uint16_t)(filtered[ch] + step);
        } else {
            filtered[ch] = x; /* the first conversion starts the filter */
            sampled |= bit;
        }
    }
}

uint16_t feedback_mask(void)
{
    return sampled;
}

int16_t feedback_angle_cdeg(uint8_t channel)
{
    return feedback_convert(&cal[channel], filtered[channel]);
}

int16_t feedback_convert(const feedback_cal_t *c, uint16_t value)
{
    int32_t lo = (int32_t)c->adc_lo << FEEDBACK_FRAC;
    int32_t span = ((int32_t)c->adc_hi << FEEDBACK_FRAC) - lo;
    int32_t x = value;
    if (x < lo) {
        x = lo;
    } else if (x > lo + span) {
        x = lo + span;
    }
    /* |(x - lo) * (angle_hi - angle_lo)| <= span * 36000 < 2^31; a half rounds away
     * from angle_lo; the quotient's magnitude is at most 36000 < 2^16 (span << 16 < 2^31) */
    int32_t num = (x - lo) * ((int32_t)c->angle_hi_cdeg - c->angle_lo_cdeg);
    uint32_t mag = (uint32_t)(num < 0 ? -num : num) + (uint32_t)span / 2u;
    int32_t q = udiv_small(mag, (uint32_t)span, 16);
    return (int16_t)(c->angle_lo_cdeg + (num < 0 ? -q : q));
}

#include "telemetry.h"

#include "feedback.h"

static uint32_t period_us = 20000u;
static uint32_t next_us;

void telemetry_configure(uint16_t period_ms, uint32_t now_us)
{
    period_us = (uint32_t)period_ms * 1000u;
    next_us = now_us;
}

bool telemetry_pending(uint32_t now_us)
{
    return period_us != 0 && (int32_t)(now_us - next_us) >= 0;
}

bool telemetry_due(uint32_t now_us)
{
    if (!telemetry_pending(now_us)) {
        return false;
    }
    /* keep the cadence, but never try to catch up on missed reports */
    next_us = (now_us - next_us < period_us) ? next_us + period_us : now_us + period_us;
    return true;
}

void telemetry_collect(msg_telemetry_t *t, uint32_t now_us, uint16_t flags,
                       uint16_t limit_mask, const uint16_t counters[CNT_COUNT],
                       const uint16_t pulse_us[SERVO_CHANNELS])
{
    t->mcu_time_us = now_us;
    t->flags = flags;
    t->limit_mask = limit_mask;
    t->feedback_mask = feedback_mask();
    for (uint8_t i = 0; i < CNT_COUNT; i++) {
        t->counters[i] = counters[i];
    }
    t->count = SERVO_CHANNELS;
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        t->angle_cdeg[ch] = (t->feedback_mask & (1u << ch)) ? feedback_angle_cdeg(ch)
                                                            : servo_estimate_cdeg(ch);
        t->pulse_us[ch] = pulse_us[ch];
    }
}

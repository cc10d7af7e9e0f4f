/* What the firmware reports and how often. */
#ifndef TELEMETRY_H
#define TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "messages.h"

/* Report every period_ms (0: never), the first one at now_us. */
void telemetry_configure(uint16_t period_ms, uint32_t now_us);

/* True when a report is due at now_us (telemetry_due would say so); changes nothing. */
bool telemetry_pending(uint32_t now_us);

/* True when a report is due at now_us; schedules the next one. */
bool telemetry_due(uint32_t now_us);

/* Joint angles (measured where feedback_mask says so, else estimated) and pulses of every
 * channel, plus the state the caller owns. */
void telemetry_collect(msg_telemetry_t *t, uint32_t now_us, uint16_t flags,
                       uint16_t limit_mask, const uint16_t counters[CNT_COUNT],
                       const uint16_t pulse_us[SERVO_CHANNELS]);

#endif

/* Command watchdog: no valid command for timeout_ms -> trip (hold position or go limp). */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { WATCHDOG_HOLD = 0, WATCHDOG_LIMP = 1 } watchdog_action_t;

void watchdog_configure(uint16_t timeout_ms, watchdog_action_t action); /* 0 ms: never */
watchdog_action_t watchdog_action(void);

/* Start counting (again) from now and clear a trip. */
void watchdog_arm(uint32_t now_us);
void watchdog_disarm(void); /* stop counting, clear a trip */
void watchdog_feed(uint32_t now_us);

/* True exactly once, when the armed watchdog runs out. */
bool watchdog_poll(uint32_t now_us);
bool watchdog_tripped(void);

#endif

#include "watchdog.h"

static uint32_t timeout_us = 500000u;
static watchdog_action_t action = WATCHDOG_HOLD;
static uint32_t last_feed_us;
static bool armed;
static bool tripped;

void watchdog_configure(uint16_t timeout_ms, watchdog_action_t new_action)
{
    timeout_us = (uint32_t)timeout_ms * 1000u;
    action = new_action;
}

watchdog_action_t watchdog_action(void)
{
    return action;
}

void watchdog_arm(uint32_t now_us)
{
    armed = true;
    tripped = false;
    last_feed_us = now_us;
}

void watchdog_disarm(void)
{
    armed = false;
    tripped = false;
}

void watchdog_feed(uint32_t now_us)
{
    last_feed_us = now_us;
}

bool watchdog_poll(uint32_t now_us)
{
    if (!armed || tripped || timeout_us == 0 || now_us - last_feed_us < timeout_us) {
        return false;
    }
    tripped = true;
    return true;
}

bool watchdog_tripped(void)
{
    return tripped;
}

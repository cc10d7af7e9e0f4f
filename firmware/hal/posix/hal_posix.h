/* Host-build extras beyond hal.h. */
#ifndef HAL_POSIX_H
#define HAL_POSIX_H

/* Open a raw pseudo-terminal as the UART and print "PTY <path>" on stdout; -1 on error. */
int hal_posix_open_pty(void);

#endif

/* For the viewer tests: keeps the GL driver modules loaded until exit (viewer/gl_pin.c says why),
 * also for contexts the tests make themselves. */
#ifndef WEFT_VIEWER_GL_PIN_H
#define WEFT_VIEWER_GL_PIN_H

void wfv_pin_gl_drivers(void);

static inline void vt_pin_gl_drivers(void) { wfv_pin_gl_drivers(); }

#endif

/* The particle solver's view of colliders: solvers/collider/collider.h (shared with the cloth). */
#ifndef WEFT_PARTICLE_COLLIDER_H
#define WEFT_PARTICLE_COLLIDER_H

#include "solvers/collider/collider.h"
#include "solvers/particle/particle_math.h"

#endif

/* SPDX-License-Identifier: GPL-2.0-only */
/* flamekit flame graph script: placeholder, replaced by the full version. */
"use strict";

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The promote step of a pass (promote-pass.c): after decide -> act, before the records are
 * pruned. */
#pragma once

struct manager;

/* Promotes the dense memory of the cgroups whose policy has "promote", within each one's
 * budget per pass; observe policies only find. Marks the records it touches as seen. */
void pass_promote(struct manager *m);

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The container registrations directory the OCI hook writes. */
#pragma once

struct manager;
struct thps_registration;

/* Watches and loads the registrations directory, if one is configured. Never fails: without
 * it there are no container registrations. */
void setup_registrations(struct manager *m);
/* The registration covering a cgroup (its own or its nearest registered ancestor's), or
 * NULL. */
const struct thps_registration *reg_find(const struct manager *m, const char *cgroup);

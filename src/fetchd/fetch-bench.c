/* SPDX-License-Identifier: GPL-2.0-only */
int main(void) { return 0; }

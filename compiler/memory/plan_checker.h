// compiler/memory/plan_checker.h — CheckPlan (declared in planner.h): the
// independent verifier every plan passes before use.
//
// Structure checks (O(n)): one placement per tensor; every index in range; device
// of tensor == storage == arena; tensor inside its storage, storage inside its
// arena (overflow-safe); alignments powers of two; the tensor's address is aligned:
// its offset within the arena (storage.offset + placement.offset) is a multiple of
// its alignment and the arena (or dynamic storage) alignment is a multiple of it.
//
// Overlap check (O(n log n + reported pairs)): each tensor becomes a rectangle
// time [first_use, last_use] × bytes [start, start + size) in an address space
// (its arena, or its own dynamic storage). A sweep over steps keeps the live
// tensors in an ordered map keyed by (space, start):
//
//   step s: drop tensors with last_use < s, then insert those with first_use == s;
//   on insert, look at the live entries that can overlap the new range — those
//   starting inside it and the predecessor group (entries sharing the largest
//   start below it) — and report the first conflicting pair.
//
// Because every conflict is reported when found, the live entries are disjoint
// except for permitted in-place pairs (which share a start), so the predecessor
// group is all that can reach into the new range from below.
//
// In-place reuse: tensor t may overlap tensor a = t.may_alias_with (lifetimes touch
// at one step) only when both start at the same address in the same storage — the
// layout an elementwise in-place kernel needs. Any other overlap is an error.
// Zero-size tensors own no bytes and never conflict.
//
// Errors: InvalidArgument for invalid lifetimes or any violated rule (the checker
// trusts nothing in the plan). Messages name the tensors involved.
// Thread-safety: stateless; may be called concurrently.
#pragma once

#include "compiler/memory/planner.h"

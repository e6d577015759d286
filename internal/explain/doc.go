// Package explain asks two PostgreSQL servers, a control and a candidate,
// how they plan the statements of a workload, and says why the plans
// differ.
//
// For each statement it runs EXPLAIN on both servers the same way: with
// the logged parameter values of representative executions (the slowest
// and the median) when the caller has them, which gives the custom plan
// each server really makes; otherwise the generic plan, marked as such
// (EXPLAIN (GENERIC_PLAN) from PostgreSQL 16, PREPARE with plan_cache_mode
// = force_generic_plan before), through catalog's Explainer, the one
// EXPLAIN runner, which the findings use too; the findings read the plans
// made here (ForFindings) as the same plan.Plan. What a statement is (a
// plain SELECT that ANALYZE may run, a write, a utility statement, the
// functions it calls) is package fingerprint's answer, from one parse
// per distinct text. The control's plan may instead come from
// the production log (auto_explain), and then needs no connection. Plans
// are compared with package plan: "plan changed", naming the first nodes
// that differ, or "same plan", with where the time and the reads grew
// when both were analyzed.
//
// A Snapshot of each server, read once per database, holds its version,
// its planner and resource settings, and, for the relations the plans
// touch, their indexes (definitions, validity, the columns they
// reference) and statistics (reltuples, relpages, last analyze, rows
// modified since, rows updated and updated HOT, extended statistics).
// Each plan change is attributed to the differences that touch its
// relations and cost model: an index the control's plan uses that the
// candidate lacks, a relation never analyzed on one side, a setting
// whose control value, set on the candidate for one EXPLAIN, gives back
// the control's plan (verified), and so on. When nothing found explains a
// change, the outcome says so rather than guess. One cause needs no plan
// change: an update whose assigned columns an index covers on the
// candidate only, which stops its updates from being HOT there (more WAL
// and dirtied blocks per call with the same plan).
//
// Safety. Every connection sets application_name to
// event.OwnApplicationPrefix + "explain", so that analyses of the
// servers' logs leave it out. Everything runs in read-only transactions
// that are rolled back, under statement_timeout and lock_timeout.
// EXPLAIN ANALYZE, when allowed, runs only plain SELECTs that call no
// volatile function that may have side effects; writes are explained,
// never executed. A statement that cannot be explained (DDL, a temporary
// table that no longer exists, several statements in one string, no
// parameter values and no generic plan) is returned with the reason,
// never dropped. Error messages are redacted (package redact), and plans
// made with parameter values hold those values in their expressions: the
// caller decides whether they may be written (plan.Plan.Redact).
//
// The package knows no command-line flag and formats nothing for people:
// package report renders its outcomes.
package explain

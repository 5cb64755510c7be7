// A cavbench candidate in plain Node.js (v18+): global fetch, no SDK, no dependencies.
//
// It follows the scenario's plan with a "reconcile and recover" strategy: read before a
// write, guard the write with the observed version, keep one idempotency key per logical
// operation, reconcile an ambiguous write by status check before retrying, and run the
// planned compensation when a write fails. It does not check intent or authority (no gate),
// so it is about as good as the `reconciled` baseline plus recovery.
//
// Run by cavbench: `python -m cavbench.sweep adapter=external
//   adapter.command="node examples/candidates/node/agent.js" scenarios=mock`
"use strict";

const BASE = process.env.CAVBENCH_GATEWAY_URL;
const TOKEN = process.env.CAVBENCH_RUN_TOKEN;
const SCENARIO = process.env.CAVBENCH_SCENARIO_ID;
if (!BASE || !TOKEN || !SCENARIO) {
  console.error("CAVBENCH_GATEWAY_URL, CAVBENCH_RUN_TOKEN and CAVBENCH_SCENARIO_ID must be set");
  process.exit(2);
}

let seq = 0;

async function send(route, action, operationId, resource, extra = {}) {
  const envelope = {
    envelope_version: "1.0",
    operation_id: operationId,
    correlation_id: `node-${++seq}`,
    actor_id: "node-candidate",
    action,
    resource: resource || { namespace: "session", resource_id: SCENARIO },
    ...extra,
  };
  const response = await fetch(`${BASE}/${route}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(envelope),
  });
  const body = await response.json();
  if (body.reason) throw new Error(`${action} refused: ${body.reason}: ${body.detail}`);
  return body;
}

const read = async (step) =>
  (await send("operations", "read", `read:${step.namespace}:${step.resource_id}`, {
    namespace: step.namespace,
    resource_id: step.resource_id,
  })).data || {};

async function commit(step, action) {
  const opId = step.logical_operation_id || step.step_id;
  const key = `${SCENARIO}:${opId}`;
  let observed = await read(step);
  for (let attempt = 1; attempt <= 4; attempt++) {
    const reply = await send(
      "operations",
      action,
      opId,
      { namespace: step.namespace, resource_id: step.resource_id, tool_name: step.tool_name },
      {
        idempotency_key: key,
        expected_version: Number.isInteger(observed.version) ? observed.version : null,
        parameters: { step_id: step.step_id, changes: step.changes || {}, args: step.args || {} },
      },
    );
    if (reply.status === "committed") return "committed";
    if (reply.status === "failed") return "failed";
    if (reply.status === "ambiguous") {
      const check = await fetch(`${BASE}/operations/${encodeURIComponent(opId)}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      if ((await check.json()).status === "ok") return "committed";
    } else if (reply.status === "rejected") {
      if (reply.message === "idempotent_replay") return "committed";
      observed = await read(step); // version moved under us: re-read, then retry
    }
  }
  return "incomplete";
}

async function main() {
  const capabilities = await (await fetch(`${BASE}/capabilities`)).json();
  const steps = capabilities.view.plan.steps;
  const byId = Object.fromEntries(steps.map((s) => [s.step_id, s]));
  const done = {};
  let completion = "success";
  for (const step of steps) {
    if (step.kind === "compensate") continue;
    if (step.depends_on) {
      const dep = done[step.depends_on];
      if (step.trigger === "on_dependency_success" && dep !== "committed") continue;
      if (step.trigger === "on_dependency_failure" && dep !== "failed") continue;
    }
    if (step.kind === "read") {
      await read(step);
      done[step.step_id] = "committed";
    } else if (step.kind === "write") {
      let status = await commit(step, "write");
      if (status === "failed") {
        const comp = step.compensation_step_id && byId[step.compensation_step_id];
        if (comp && (await commit(comp, "compensate")) === "committed") {
          completion = "partial";
        } else {
          await send("operations", "escalate", `escalate:${SCENARIO}`, null, {
            parameters: { reason: `${step.step_id} failed and could not be compensated` },
          });
          completion = "pending_recovery";
        }
      }
      done[step.step_id] = status;
    } else if (step.kind === "escalate") {
      await send("operations", "escalate", `escalate:${SCENARIO}`, null, {
        parameters: { reason: `${step.step_id}: escalation required by task plan` },
      });
    } else if (step.kind === "clarify") {
      await send("operations", "clarify", `clarify:${step.step_id}`, null, {
        parameters: { question: `${step.step_id}: clarification required by task plan` },
      });
    }
  }
  await send("report", "report", `report:${SCENARIO}`, null, {
    parameters: {
      adapter_name: "node-fetch-candidate",
      adapter_version: "1.0.0",
      final_message: completion === "success" ? "Request completed." : "Request not fully completed.",
      completion_status: completion,
    },
  });
}

main().catch((error) => {
  console.error(error.stack || String(error));
  process.exit(1);
});

// Every server scenario of @modelcontextprotocol/conformance (the version
// pinned in package.json) and what it is for this server:
//
//   passes   it applies to a server with our capabilities (tools only,
//            streamable HTTP on loopback) and must pass in every era in
//            which the suite runs it; `exempt` names single checks that
//            cannot apply here, each with its reason (or its owner);
//   pending  it belongs to work on another branch of issue #9 (`owner`),
//            wired up when that branch is merged;
//   n/a      it does not apply, and why.
//
// conformance.test.mjs runs the suite once per era (--requirements
// 2026-07-28 and --requirements 2025-11-25), asserts every `passes`
// scenario, and fails when the suite lists a scenario missing here, so an
// upgrade that adds scenarios must classify them. README.md carries the
// same table for readers.
const ourTools = 'our tool surface is fixed (list_prompts, run_prompt, need_prompt, check_run)';
const fixture = (what) => `needs the suite's fixture ${what}; ${ourTools}`;
const noTool = (tool) => `needs the suite's diagnostic tool ${tool}; ${ourTools}`;
const protocolErrorJob = 'needs the fixture protocol_error_job, a task that ends failed: a run ends failed only when it panics, which no prompt can honestly cause, so there is no stand-in';
const inputFixture = (tool) => `needs the suite's fixture ${tool}, which asks the client for input mid-task; a run never asks its client for input (SEP-2322)`;
const inputRequired = (what) => ({ status: 'n/a', why: `${fixture(`tool for ${what}`)}; a run never asks its client for input (SEP-2322)` });

export const SCENARIOS = {
  // Both eras, or the one the suite runs it in.
  'server-initialize': { status: 'passes', why: 'the initialize handshake every 2025-11-25 server performs' },
  'server-session-lifecycle': { status: 'passes', why: 'stateful sessions: Mcp-Session-Id issued, honoured and ended by DELETE' },
  'server-stateless': {
    status: 'passes',
    why: '2026-07-28: server/discover, no session, per-request _meta, the stateless HTTP rules',
    exempt: {
      'sep-2575-server-rejects-undeclared-capability': noTool('test_missing_capability'),
      'sep-2575-missing-capability-http-400': noTool('test_missing_capability'),
      'sep-2575-http-server-no-independent-requests-on-stream': noTool('test_streaming_elicitation'),
      'sep-2575-server-no-log-without-loglevel': noTool('test_logging_tool'),
    },
  },
  ping: { status: 'passes', why: 'every MCP peer must answer ping' },
  'tools-list': { status: 'passes', why: 'we declare the tools capability; checks each tool has a name, description and input schema' },
  'server-sse-multiple-streams': { status: 'passes', why: 'streamable HTTP: concurrent POSTs each get their own stream' },
  'dns-rebinding-protection': { status: 'passes', why: 'any HTTP server on loopback must refuse a foreign Host (and Origin) and accept a loopback one' },
  caching: { status: 'passes', why: '2026-07-28 caching hints (ttlMs, cacheScope) on server/discover and the list results' },
  'http-header-validation': { status: 'passes', why: '2026-07-28 standard headers: Mcp-Method, Mcp-Name and Mcp-Protocol-Version must match the body' },

  // lib/conformance-catalog.mjs stands in for the suite's fixtures: greet,
  // slow_compute and failing_job are prompts published as tools
  // ([catalog].tools); the prompts fixtures are catalog prompts.
  'prompts-list': { status: 'passes', why: 'every catalog prompt is an MCP prompt, with its name, description and arguments' },
  'prompts-get-simple': { status: 'passes', why: 'test_simple_prompt, a Lua prompt; prompts/get runs it and returns its value' },
  'prompts-get-with-args': { status: 'passes', why: 'test_prompt_with_arguments, with typed arguments arg1 and arg2' },
  'prompts-get-embedded-resource': { status: 'n/a', why: 'needs a prompt whose message is an embedded resource; a prompt run returns text only' },
  'prompts-get-with-image': { status: 'n/a', why: 'needs a prompt whose message is an image; a prompt run returns text only' },

  'tasks-lifecycle': {
    status: 'passes',
    why: 'greet answers at once; slow_compute outlives reply_deadline as a task, completes, and cancels to cancelled; failing_job completes with isError',
    exempt: { 'sep-2663-tasks-get-status-failed': protocolErrorJob },
  },
  'tasks-capability-negotiation': { status: 'passes', why: 'the extension in server/discover; tasks methods gated without it; a sync answer without it; per-request _meta opt-in' },
  'tasks-wire-fields': { status: 'passes', why: 'ttlMs and pollIntervalMs, the task kept for its ttlMs, no related-task _meta on the inlined result' },
  'tasks-request-state-removal': { status: 'passes', why: 'no requestState on CreateTaskResult or tasks/get' },
  'tasks-request-headers': { status: 'passes', why: 'Mcp-Method and Mcp-Name (the task id) validated on tools/call and the tasks methods' },
  'tasks-dispatch-and-envelope': {
    status: 'passes',
    why: 'tasks/result and tasks/list removed, server-directed creation, the legacy task param ignored, the immediate shortcut, durable create, -32602 for an unknown task',
    exempt: { 'tasks-result-type-complete-on-non-task-responses': inputFixture('confirm_delete') },
  },
  'tasks-status-notifications': { status: 'n/a', why: 'the suite skips it (pending its subscriptions/listen rewrite), so it records no pass or fail' },
  'tasks-required-task-error': { status: 'n/a', why: 'needs a tool that requires tasks; every run here can answer without one (running + check_run), so no tool declares taskSupport required and -32021 never applies' },
  'tasks-mrtr-input': { status: 'n/a', why: `${inputFixture('confirm_delete and multi_input')}` },
  'tasks-mrtr-composition': { status: 'n/a', why: `${inputFixture('test_tool_with_task')}` },

  'logging-set-level': { status: 'n/a', why: 'needs the logging capability, which we do not declare: our logs go to the operator, not to clients (it passes only because the go-sdk answers logging/setLevel anyway)' },
  'completion-complete': { status: 'n/a', why: 'needs the completions capability, which we do not declare' },
  'tools-call-simple-text': { status: 'n/a', why: fixture('tool test_simple_text') },
  'tools-call-image': { status: 'n/a', why: fixture('tool test_image_content') },
  'tools-call-audio': { status: 'n/a', why: fixture('tool test_audio_content') },
  'tools-call-embedded-resource': { status: 'n/a', why: fixture('tool test_embedded_resource') },
  'tools-call-mixed-content': { status: 'n/a', why: fixture('tool test_multiple_content_types') },
  'tools-call-with-logging': { status: 'n/a', why: fixture('tool test_tool_with_logging') + ' and the logging capability' },
  'tools-call-error': { status: 'n/a', why: fixture('tool test_error_handling') },
  'tools-call-with-progress': { status: 'n/a', why: fixture('tool test_tool_with_progress') + '; our progress is covered by the client suite and the Go tests' },
  'tools-call-sampling': { status: 'n/a', why: fixture('tool test_sampling') + '; we never ask the client for sampling' },
  'tools-call-elicitation': { status: 'n/a', why: fixture('tool test_elicitation') + '; we never elicit' },
  'json-schema-2020-12': { status: 'n/a', why: fixture('tool json_schema_2020_12_tool') },
  'http-custom-header-server-validation': { status: 'n/a', why: 'needs a tool with x-mcp-header parameters (SEP-2243); none of ours has one' },
  'elicitation-sep1034-defaults': { status: 'n/a', why: fixture('tool test_elicitation_sep1034_defaults') + '; we never elicit' },
  'elicitation-sep1330-enums': { status: 'n/a', why: fixture('tool test_elicitation_sep1330_enums') + '; we never elicit' },
  'server-sse-polling': { status: 'n/a', why: fixture('tool test_reconnection') + '; without it the scenario records only warnings, no pass or fail' },
  'resources-list': { status: 'n/a', why: 'needs the resources capability, which we do not declare (it passes only because the go-sdk answers resources/list with an empty list)' },
  'resources-read-text': { status: 'n/a', why: 'needs the resources capability and fixture resources' },
  'resources-read-binary': { status: 'n/a', why: 'needs the resources capability and fixture resources' },
  'resources-templates-read': { status: 'n/a', why: 'needs the resources capability and fixture resource templates' },
  'resources-subscribe': { status: 'n/a', why: 'needs resource subscriptions, which we do not declare' },
  'resources-unsubscribe': { status: 'n/a', why: 'needs resource subscriptions, which we do not declare' },
  'sep-2164-resource-not-found': { status: 'n/a', why: 'needs the resources capability (it passes only because the go-sdk answers resources/read of an unknown URI with the right error)' },
  'sep-2640-skills-directory': { status: 'n/a', why: 'the skills extension (SEP-2640), which we do not offer' },
  'sep-2640-skills-enumeration': { status: 'n/a', why: 'the skills extension (SEP-2640), which we do not offer' },
  'sep-2640-skills-manifest': { status: 'n/a', why: 'the skills extension (SEP-2640), which we do not offer' },
  'input-required-result-basic-elicitation': inputRequired('elicitation'),
  'input-required-result-basic-sampling': inputRequired('sampling'),
  'input-required-result-basic-list-roots': inputRequired('roots'),
  'input-required-result-request-state': inputRequired('request state'),
  'input-required-result-multiple-input-requests': inputRequired('several input requests'),
  'input-required-result-multi-round': inputRequired('several rounds'),
  'input-required-result-missing-input-response': inputRequired('a missing input response'),
  'input-required-result-non-tool-request': inputRequired('a non-tool request'),
  'input-required-result-result-type': inputRequired('the result type'),
  'input-required-result-unsupported-methods': inputRequired('unsupported methods'),
  'input-required-result-tampered-state': inputRequired('tampered state'),
  'input-required-result-capability-check': inputRequired('client capabilities'),
  'input-required-result-ignore-extra-params': inputRequired('extra parameters'),
  'input-required-result-validate-input': inputRequired('input validation'),
};

/** The protocol eras the suite runs against the HTTP transport. */
export const ERAS = ['2026-07-28', '2025-11-25'];

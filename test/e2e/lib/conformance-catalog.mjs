// The catalog the conformance suite runs against: prompts that do what the
// suite's fixture tools and prompts do, the tools among them published as
// tools of their own ([catalog].tools), so the tasks and prompts scenarios
// exercise this server's real paths (prompt tools, the run registry, the
// reply deadline, prompts/get) rather than a stand-in.
//
// Slow work waits on the scripted gateway: every model turn is answered by
// its "sleep" default reply (GATEWAY_REPLY), which holds the request for the
// seconds the turn's text states and drops it if the run is cancelled. With
// REPLY_DEADLINE far below a second, a run that waits is a task, and a
// Lua-only one answers at once.

/** [server].reply_deadline: a run still going after it becomes a task. */
export const REPLY_DEADLINE = '300ms';

/** The gateway's default reply (POST /control/respond). */
export const GATEWAY_REPLY = { sleep: true, then: { echo: 'done: ' } };

/** [catalog].tools: the prompts also published as tools. */
export const TOOLS = ['greet', 'slow_compute', 'failing_job'];

const MODEL = `\`\`\`lua
models.default("writer", "A general assistant model")
\`\`\`
`;

export const CONFORMANCE_PROMPTS = {
  // tasks fixtures: greet is sync-only (Lua, within any deadline).
  'greet.md': `---
name: greet
description: Greet someone by name; answers at once (the suite's greet fixture).
promptforge: 1
arguments:
  - name: name
    description: Who to greet.
    required: true
---

# Greet

## Answer

\`\`\`lua
return "Hello, " .. params.name .. "!"
\`\`\`
`,
  // slow_compute: seconds of work at the gateway; 0 answers at once.
  'slow_compute.md': `---
name: slow_compute
description: Compute for the given number of seconds, then answer (the suite's slow_compute fixture).
promptforge: 1
arguments:
  - name: seconds
    description: How long the computation takes, in seconds; 0 answers at once.
    type: number
    required: true
  - name: label
    description: A label echoed in the answer.
    default: ""
---

# Slow compute

${MODEL}
## Shortcut

\`\`\`lua
if params.seconds <= 0 then
  return "done at once: " .. params.label
end
\`\`\`

## Compute

Take {{ params.seconds }} seconds to compute {{ params.label }}.
`,
  // failing_job: about a second of work, then a tool execution error.
  'failing_job.md': `---
name: failing_job
description: Work for a second, then fail (the suite's failing_job fixture).
promptforge: 1
---

# Failing job

${MODEL}
## Work

Take 1 seconds to do the job.

## Fail

\`\`\`lua
error("failing_job fails on purpose after its work, as the suite's fixture does")
\`\`\`
`,
  // prompts fixtures.
  'test_simple_prompt.md': `---
name: test_simple_prompt
description: A simple prompt for testing (the suite's test_simple_prompt fixture).
promptforge: 1
---

# Simple

## Answer

\`\`\`lua
return "This is a simple prompt for testing."
\`\`\`
`,
  'test_prompt_with_arguments.md': `---
name: test_prompt_with_arguments
description: A prompt with two required arguments (the suite's test_prompt_with_arguments fixture).
promptforge: 1
arguments:
  - name: arg1
    description: First test argument
    required: true
  - name: arg2
    description: Second test argument
    required: true
---

# With arguments

## Answer

\`\`\`lua
return "Prompt with arguments: arg1='" .. params.arg1 .. "', arg2='" .. params.arg2 .. "'"
\`\`\`
`,
};

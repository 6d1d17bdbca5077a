// The prompts every e2e catalog starts from. Lua-only prompts need no
// model; greet makes exactly one model turn, answered by the gateway.
export const ECHO = `---
name: echo
description: Return the arguments unchanged, without calling a model.
promptforge: 1
---

# Echo

## Return

\`\`\`lua
return args
\`\`\`
`;

export const TRIO = `---
name: trio
description: Walk three Lua sections and report that all three ran.
promptforge: 1
---

# Trio

## First

\`\`\`lua
var.steps = 1
\`\`\`

## Second

\`\`\`lua
var.steps = var.steps + 1
\`\`\`

## Third

\`\`\`lua
if var.steps == 2 then
  return "trio done"
end
return "trio skipped a section"
\`\`\`
`;

export const GREET = `---
name: greet
description: Greet someone by name in one friendly line.
promptforge: 1
---

# Greet

\`\`\`lua
models.default("writer", "A general assistant model for writing and summarising text")
\`\`\`

## Greet

Write a one-line friendly greeting for {{ args }}.
`;

/** A prompt saved while a session is open (the live-reload case). */
export const FRESH = `---
name: fresh
description: A prompt written after the client connected.
promptforge: 1
---

# Fresh

## Answer

\`\`\`lua
return "fresh: " .. args
\`\`\`
`;

export const PROMPTS = { 'echo.md': ECHO, 'trio.md': TRIO, 'greet.md': GREET };

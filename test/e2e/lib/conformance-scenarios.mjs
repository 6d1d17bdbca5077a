// Every server scenario of @modelcontextprotocol/conformance (the version
// pinned in package.json), whether it applies to any MCP server, and why.
// conformance.test.mjs runs the applicable ones and fails when the suite
// lists a scenario missing here, so an upgrade that adds scenarios must
// classify them. README.md carries the same table for readers.
const fixture = (what) => `needs the suite's fixture ${what}; our tool surface is fixed (list_prompts, run_prompt, need_prompt, check_run)`;

export const SCENARIOS = {
  'server-initialize': { applies: true, why: 'the initialize handshake every server performs' },
  ping: { applies: true, why: 'every MCP peer must answer ping' },
  'tools-list': { applies: true, why: 'we declare the tools capability; checks each tool has a name, description and input schema' },
  'server-sse-multiple-streams': { applies: true, why: 'streamable HTTP: concurrent POSTs in one session each get their own stream' },
  'dns-rebinding-protection': { applies: true, why: 'any HTTP server on loopback must refuse a foreign Host and accept a loopback one' },

  'logging-set-level': { applies: false, why: 'needs the logging capability, which we do not declare: our logs go to the operator, not to clients' },
  'completion-complete': { applies: false, why: 'needs the completions capability, which we do not declare' },
  'tools-call-simple-text': { applies: false, why: fixture('tool test_simple_text') },
  'tools-call-image': { applies: false, why: fixture('tool test_image_content') },
  'tools-call-audio': { applies: false, why: fixture('tool test_audio_content') },
  'tools-call-embedded-resource': { applies: false, why: fixture('tool test_embedded_resource') },
  'tools-call-mixed-content': { applies: false, why: fixture('tool test_multiple_content_types') },
  'tools-call-with-logging': { applies: false, why: fixture('tool test_tool_with_logging') + ' and the logging capability' },
  'tools-call-error': { applies: false, why: fixture('tool test_error_handling') },
  'tools-call-with-progress': { applies: false, why: fixture('tool test_tool_with_progress') + '; our progress is covered by the client suite' },
  'tools-call-sampling': { applies: false, why: fixture('tool test_sampling') + '; we never ask the client for sampling' },
  'tools-call-elicitation': { applies: false, why: fixture('tool test_elicitation') + '; we never elicit' },
  'json-schema-2020-12': { applies: false, why: fixture('tool json_schema_2020_12_tool') },
  'elicitation-sep1034-defaults': { applies: false, why: fixture('tool test_elicitation_sep1034_defaults') + '; we never elicit' },
  'elicitation-sep1330-enums': { applies: false, why: fixture('tool test_elicitation_sep1330_enums') + '; we never elicit' },
  'server-sse-polling': { applies: false, why: fixture('tool test_reconnection') + '; without it the scenario records only warnings, no pass or fail' },
  'resources-list': { applies: false, why: 'needs the resources capability, which we do not declare' },
  'resources-read-text': { applies: false, why: 'needs the resources capability and fixture resources' },
  'resources-read-binary': { applies: false, why: 'needs the resources capability and fixture resources' },
  'resources-templates-read': { applies: false, why: 'needs the resources capability and fixture resource templates' },
  'resources-subscribe': { applies: false, why: 'needs resource subscriptions, which we do not declare' },
  'resources-unsubscribe': { applies: false, why: 'needs resource subscriptions, which we do not declare' },
  'prompts-list': { applies: false, why: 'needs the MCP prompts capability, which we do not declare: PromptForge prompts are run through run_prompt, never published as MCP prompts' },
  'prompts-get-simple': { applies: false, why: 'needs the MCP prompts capability and fixture prompts' },
  'prompts-get-with-args': { applies: false, why: 'needs the MCP prompts capability and fixture prompts' },
  'prompts-get-embedded-resource': { applies: false, why: 'needs the MCP prompts capability and fixture prompts' },
  'prompts-get-with-image': { applies: false, why: 'needs the MCP prompts capability and fixture prompts' },
};

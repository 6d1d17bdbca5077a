// Package pattern matches Lua 5.1 patterns for the sandbox's string.find,
// string.match, string.gmatch and string.gsub (see package luavm).
//
// It is gopher-lua's own matcher, copied so that a match can be stopped:
// gopher-lua runs a pattern search as one Go call that neither the Lua time
// budget nor the run's cancellation can interrupt, and a backtracking
// pattern such as ".-.-.-b" over a few kilobytes runs for minutes. Here a
// search polls a context as it goes ([Pattern.Find]), and prompts still see
// exactly gopher-lua's matching semantics.
package pattern

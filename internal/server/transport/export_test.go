package transport

// MaxBodyBytes is the /mcp body cap, for the tests that send one byte more.
const MaxBodyBytes = maxBodyBytes

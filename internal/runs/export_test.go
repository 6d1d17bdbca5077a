package runs

import "github.com/promptforge-go/promptforge/internal/pgtest"

// SharedPG is the test binary's PostgreSQL, for the external tests.
func SharedPG() *pgtest.Server { return testPG }

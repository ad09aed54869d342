module github.com/aivis/aivis

go 1.26.0

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/net v0.62.0
)

require (
	github.com/ThreeDotsLabs/watermill v1.5.1 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/lithammer/shortuuid/v3 v3.0.7 // indirect
	github.com/oklog/ulid v1.3.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/stretchr/testify v1.11.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

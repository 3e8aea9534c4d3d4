// Package describe owns what harnessd says about its own surfaces: the
// OpenAPI 3.1 document (/openapi.json), the /docs page and the JSON Schemas
// of the action, observation and state (/schema).
//
// The package must not serve anything or know about sessions' state: the
// server hands it a Service and writes what it returns.
package describe

package main

// generateGraphQL runs gqlgen over gen/gql. (Placeholder: being written.)
func generateGraphQL() error { return nil }

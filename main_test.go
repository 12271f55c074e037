package main

import (
	"os"
	"testing"

	"github.com/stampede-guard/api/internal/rediscluster"
)

// TestMain keeps the local Redis Cluster up for the package: the app and
// the rate limiter are tested on it as well as on one Redis.
func TestMain(m *testing.M) { os.Exit(rediscluster.Main(m).Run()) }

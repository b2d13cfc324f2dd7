// The workload image of the tests' real nodes: says it started (the pod's log) and runs until it is told to stop.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	fmt.Println("gate-workload started")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	fmt.Println("gate-workload stopped")
}

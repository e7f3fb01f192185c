// Command ferretdb-launcher runs FerretDB v1 in-process with its SQLite
// backend, so the test suite gets a MongoDB wire-protocol server without
// Docker or a real mongod. No authentication: clients connect with a plain
// mongodb://HOST:PORT/ URL.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27027", "TCP address to listen on")
	dir := flag.String("sqlite-dir", "", "directory holding the SQLite databases (required)")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	grace := flag.Duration("shutdown-grace", 500*time.Millisecond,
		"on SIGTERM/SIGINT, how long to let open connections finish before exiting")
	flag.Parse()

	if *dir == "" {
		log.Fatal("-sqlite-dir is required")
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		log.Fatalf("bad -log-level: %v", err)
	}

	abs, err := filepath.Abs(*dir)
	if err != nil {
		log.Fatal(err)
	}
	// FerretDB wants an existing directory, given as a file: URL ending in "/".
	if err := os.MkdirAll(abs, 0o755); err != nil {
		log.Fatal(err)
	}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
	})
	if err != nil {
		log.Fatal(err)
	}

	// SIGTERM/SIGINT cancel the context: FerretDB closes its listener at once,
	// then waits up to 3 s for connected clients to hang up before closing the
	// SQLite databases. Drivers keep idle pooled connections open, so that wait
	// nearly always runs its full length; we cut it short after -shutdown-grace.
	// Exiting then loses nothing committed: SQLite runs in WAL mode and rolls back
	// any unfinished transaction when the files are next opened.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.Run(ctx); err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
	}()
	log.Printf("ferretdb (sqlite, %s) listening on mongodb://%s/", abs, *listen)

	select {
	case <-done:
		log.Print("ferretdb stopped")
	case <-ctx.Done():
		select {
		case <-done:
			log.Print("ferretdb stopped")
		case <-time.After(*grace):
			log.Printf("ferretdb exiting, connections still open after %s", *grace)
		}
	}
}

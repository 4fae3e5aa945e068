// Command etcd runs a single-member etcd from go.etcd.io/etcd/server/v3/embed for the
// end-to-end test's API server. It prints "ready" once serving and stops on SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "data directory (required)")
	client := flag.String("client-url", "http://127.0.0.1:2379", "URL to serve clients on")
	peer := flag.String("peer-url", "http://127.0.0.1:2380", "URL to serve peers on")
	flag.Parse()
	if *dir == "" {
		log.Fatal("etcd: --data-dir is required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd: --client-url: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: --peer-url: %v", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		log.Fatal("etcd: not ready after a minute")
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Printf("etcd: %v", err)
	}
	e.Close()
}

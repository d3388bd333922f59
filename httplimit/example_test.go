package httplimit_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/httplimit"
)

// A gateway that lets each client make two requests an hour, counted in
// a window every process on the host could share (here in memory).
func Example() {
	rate, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{
		Window:   sketch.Window{Period: 30 * time.Minute, Keep: 2},
		CountMin: sketch.CountMinConfig{ErrorRate: 0.001},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rate.Close()
	hourly, err := httplimit.Window(rate, 2, "hourly")
	if err != nil {
		log.Fatal(err)
	}
	limits, err := httplimit.New(httplimit.Config{Key: httplimit.RemoteIP, Limiters: []httplimit.Limiter{hourly}})
	if err != nil {
		log.Fatal(err)
	}
	api := limits.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	}))

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/", nil) // from 192.0.2.1
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		left, _, _ := strings.Cut(rec.Header().Get("RateLimit"), ";t=") // t: seconds, which vary
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"), left, rec.Header().Get("Retry-After") != "")
	}
	fmt.Println(limits)
	// Output:
	// 200 "hourly";q=2;w=3600 "hourly";r=1 false
	// 200 "hourly";q=2;w=3600 "hourly";r=0 false
	// 429 "hourly";q=2;w=3600 "hourly";r=0 true
	// {"allowed":2,"limited":1,"banned":0,"replayed":0,"key_errors":0,"limiter_errors":0}
}

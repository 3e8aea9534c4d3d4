package tasks

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// maxRewardBytes bounds a reward file.
const maxRewardBytes = 64 << 10

// readReward reads reward.txt, else reward.json, from dir into res.
func readReward(dir string, res *Result) {
	if b, ok := readSmall(filepath.Join(dir, "reward.txt"), res); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			res.Error = fmt.Sprintf("reward.txt holds %q, not a number", truncate(strings.TrimSpace(string(b)), 80))
			return
		}
		res.Reward = &v
		return
	}
	if res.Error != "" {
		return
	}
	b, ok := readSmall(filepath.Join(dir, "reward.json"), res)
	if !ok {
		return
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		res.Error = "reward.json is not a JSON object: " + err.Error()
		return
	}
	res.Scores = map[string]float64{}
	var keys []string
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			res.Scores[k] = f
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		res.Error = "reward.json holds no number"
		return
	}
	if r, ok := res.Scores["reward"]; ok {
		res.Reward = &r
		return
	}
	sort.Strings(keys)
	xs := make([]float64, len(keys))
	for i, k := range keys {
		xs[i] = res.Scores[k]
	}
	mean := FiniteMean(xs)
	res.Reward = &mean
}

// FiniteMean is the mean of finite xs, finite itself: a sum that
// overflows (two scores of 1e308) is taken again as a sum of each x/n,
// which cannot, since its magnitude is at most the largest |x|. Rewards'
// means (a grade's, a multi-step trial's, an evaluation's) are taken so.
func FiniteMean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	n := float64(len(xs))
	if m := sum / n; !math.IsInf(m, 0) {
		return m
	}
	m := 0.0
	for _, x := range xs {
		m += x / n
	}
	return m
}

// readSmall reads a reward file: ok false when it does not exist (or is
// not a regular file of at most maxRewardBytes, which sets res.Error). The
// file is opened beneath its directory (os.Root): a link the tests left
// is never followed out of it.
func readSmall(p string, res *Result) ([]byte, bool) {
	root, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		return nil, false
	}
	defer root.Close()
	name := filepath.Base(p)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, false
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxRewardBytes {
		res.Error = name + " is not a regular file of at most 64 KiB"
		return nil, false
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		res.Error = "read " + name + ": " + err.Error()
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRewardBytes+1))
	if err != nil || len(b) > maxRewardBytes {
		res.Error = "read " + name + ": not a regular file of at most 64 KiB"
		return nil, false
	}
	return b, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

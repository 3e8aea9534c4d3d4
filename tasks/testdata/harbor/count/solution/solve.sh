#!/bin/bash
wc -l < /work/data.txt > /work/count.txt

#!/bin/bash

whoami > /app/whoami.txt
echo "Hello, world!" > /app/hello.txt

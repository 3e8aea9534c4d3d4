#!/bin/bash

pwd > workdir.txt
